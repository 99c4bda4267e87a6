"""The cluster PKI: what `mkpy up` creates, what it reuses, and what it reissues."""

from __future__ import annotations

import datetime
import ipaddress
import ssl
import stat

import pytest
from cryptography import x509
from cryptography.x509.oid import NameOID

from minikube_py.auth import pki
from minikube_py.auth.authn import Authenticator

NOW = datetime.datetime(2030, 1, 1, tzinfo=datetime.UTC)


def serving(pki_dir, ca, advertise="192.168.1.5", now=NOW):
    ips, dns = pki.apiserver_sans(advertise, "10.96.0.0/12")
    return pki.ensure_serving_cert(pki_dir, ca, "apiserver", common_name="kube-apiserver",
                                   ip_addresses=ips, dns_names=dns, now=now)


def admin(pki_dir, ca, now=NOW):
    return pki.ensure_client_cert(pki_dir, ca, "admin", user="kubernetes-admin", groups=["system:masters"], now=now)


def test_a_new_ca_is_a_ca_for_ten_years(tmp_path):
    ca = pki.ensure_ca(tmp_path)
    assert ca.cert.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    assert ca.cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value == "kubernetes"
    lifetime = ca.cert.not_valid_after_utc - ca.cert.not_valid_before_utc
    assert lifetime >= datetime.timedelta(days=3650)


def test_private_keys_are_readable_only_by_their_owner(tmp_path):
    ca = pki.ensure_ca(tmp_path)
    pair = admin(tmp_path, ca)
    for path in (ca.key_path, pair.key_path):
        assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_a_second_up_reuses_every_certificate(tmp_path):
    ca = pki.ensure_ca(tmp_path, now=NOW)
    first = (serving(tmp_path, ca).cert, admin(tmp_path, ca).cert)
    again = pki.ensure_ca(tmp_path, now=NOW)
    assert again.cert == ca.cert
    assert (serving(tmp_path, again).cert, admin(tmp_path, again).cert) == first


def test_the_serving_certificate_names_every_address_of_the_apiserver(tmp_path):
    cert = serving(tmp_path, pki.ensure_ca(tmp_path)).cert
    san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert set(san.get_values_for_type(x509.IPAddress)) == {
        ipaddress.ip_address(a) for a in ("127.0.0.1", "::1", "192.168.1.5", "10.96.0.1")}
    assert set(san.get_values_for_type(x509.DNSName)) == {
        "localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc",
        "kubernetes.default.svc.cluster.local"}


def test_a_new_advertise_address_reissues_only_the_serving_certificate(tmp_path):
    ca = pki.ensure_ca(tmp_path)
    old_serving, old_admin = serving(tmp_path, ca).cert, admin(tmp_path, ca).cert
    assert serving(tmp_path, ca, advertise="10.0.0.7").cert != old_serving
    assert admin(tmp_path, ca).cert == old_admin
    assert pki.ensure_ca(tmp_path).cert == ca.cert


def test_a_client_certificate_carries_user_as_cn_and_each_group_as_o(tmp_path):
    ca = pki.ensure_ca(tmp_path)
    cert = pki.ensure_client_cert(tmp_path, ca, "alice", user="alice", groups=["devs", "ops"]).cert
    assert cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value == "alice"
    assert [a.value for a in cert.subject.get_attributes_for_oid(NameOID.ORGANIZATION_NAME)] == ["devs", "ops"]


def test_changed_groups_reissue_a_client_certificate(tmp_path):
    ca = pki.ensure_ca(tmp_path)
    first = pki.ensure_client_cert(tmp_path, ca, "bob", user="bob", groups=["a"]).cert
    second = pki.ensure_client_cert(tmp_path, ca, "bob", user="bob", groups=["a", "b"]).cert
    assert first != second


@pytest.mark.parametrize("days_later, reissued", [(300, False), (340, True), (400, True)])
def test_a_leaf_close_to_expiry_is_reissued(tmp_path, days_later, reissued):
    ca = pki.ensure_ca(tmp_path, now=NOW)
    first = admin(tmp_path, ca, now=NOW).cert
    later = NOW + datetime.timedelta(days=days_later)
    assert (admin(tmp_path, ca, now=later).cert != first) is reissued


def test_a_new_ca_causes_every_leaf_to_be_reissued(tmp_path):
    ca = pki.ensure_ca(tmp_path, now=NOW)
    old = admin(tmp_path, ca).cert
    ca.cert_path.unlink()
    new_ca = pki.ensure_ca(tmp_path, now=NOW)
    assert new_ca.cert != ca.cert
    new = admin(tmp_path, new_ca).cert
    assert new != old
    new.verify_directly_issued_by(new_ca.cert)


def test_a_key_that_does_not_match_its_certificate_is_replaced(tmp_path):
    ca = pki.ensure_ca(tmp_path)
    pair = admin(tmp_path, ca)
    pair.key_path.write_bytes(ca.key_path.read_bytes())
    repaired = admin(tmp_path, ca)
    assert repaired.cert != pair.cert


def test_garbage_on_disk_is_replaced(tmp_path):
    (tmp_path / "ca.crt").write_text("not a certificate")
    (tmp_path / "ca.key").write_text("not a key")
    ca = pki.ensure_ca(tmp_path)
    assert ca.cert.extensions.get_extension_for_class(x509.BasicConstraints).value.ca


@pytest.mark.parametrize("cidr, first", [("10.96.0.0/12", "10.96.0.1"), ("10.0.0.0/24", "10.0.0.1"),
                                         ("fd00::/108", "fd00::1")])
def test_the_kubernetes_service_ip_is_the_first_of_the_range(cidr, first):
    assert pki.first_service_ip(cidr) == ipaddress.ip_address(first)


def test_a_tls_handshake_with_these_certificates_authenticates_the_admin(tmp_path):
    """The whole path: kubectl-like client presents admin.crt, the server verifies it and reads the user."""
    ca = pki.ensure_ca(tmp_path)
    server_pair, client_pair = serving(tmp_path, ca, advertise="", now=None), admin(tmp_path, ca, now=None)
    server_ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_ctx.load_cert_chain(server_pair.cert_path, server_pair.key_path)
    server_ctx.load_verify_locations(ca.cert_path)
    server_ctx.verify_mode = ssl.CERT_OPTIONAL
    client_ctx = ssl.create_default_context(cafile=str(ca.cert_path))
    client_ctx.load_cert_chain(client_pair.cert_path, client_pair.key_path)
    server = _handshake(server_ctx, client_ctx, "127.0.0.1")
    user = Authenticator().authenticate(server.getpeercert(), None)
    assert user is not None
    assert (user.username, user.groups) == ("kubernetes-admin", ("system:masters", "system:authenticated"))


def test_the_serving_certificate_is_refused_for_a_name_it_does_not_carry(tmp_path):
    ca = pki.ensure_ca(tmp_path)
    pair = serving(tmp_path, ca, now=None)
    server_ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_ctx.load_cert_chain(pair.cert_path, pair.key_path)
    client_ctx = ssl.create_default_context(cafile=str(ca.cert_path))
    with pytest.raises(ssl.SSLCertVerificationError, match="mismatch"):
        _handshake(server_ctx, client_ctx, "example.com")


def _handshake(server_ctx: ssl.SSLContext, client_ctx: ssl.SSLContext, server_name: str) -> ssl.SSLObject:
    """Run a TLS handshake in memory (no sockets) and return the server's side."""
    c_in, c_out, s_in, s_out = ssl.MemoryBIO(), ssl.MemoryBIO(), ssl.MemoryBIO(), ssl.MemoryBIO()
    client = client_ctx.wrap_bio(c_in, c_out, server_hostname=server_name)
    server = server_ctx.wrap_bio(s_in, s_out, server_side=True)
    done = {"client": False, "server": False}
    for _ in range(10):
        for name, side in (("client", client), ("server", server)):
            if not done[name]:
                try:
                    side.do_handshake()
                    done[name] = True
                except ssl.SSLWantReadError:
                    pass
            s_in.write(c_out.read())
            c_in.write(s_out.read())
        if all(done.values()):
            return server
    raise AssertionError("handshake did not complete")
