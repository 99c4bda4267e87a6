"""The cluster's PKI: one certificate authority and the certificates it signs.

`mkpy up` calls the `ensure_*` functions on every start. The first call creates a CA (`ca.crt`/`ca.key`),
the apiserver's serving certificate and the admin client certificate; later calls load what is on disk
and reissue only what is missing, broken, expiring within 30 days, signed by another CA, or (for the
serving certificate) made for different SANs. So `mkpy up` twice reuses the PKI, and a changed advertise
address simply yields a new serving certificate from the same CA.

Identity lives in the certificate subject, as kube's x509 authenticator reads it: the Common Name is the
user name and every Organization is a group (the admin is `kubernetes-admin` in `system:masters`; later
components get `system:kube-scheduler`, `system:node:<name>` in `system:nodes`, ...).

The service-account key pair (`sa.key`/`sa.pub`) is no certificate: it signs and verifies the JWTs of
`auth/serviceaccount.py`.

Certificate keys are ECDSA P-256: they take ~1 ms to generate (RSA 2048 takes ~100 ms), and Go's TLS (kubectl),
OpenSSL and `cryptography` all accept them. Keys are written as PKCS#8 PEM with mode 0600; every file is
written to a temporary name and renamed, so a crash never leaves half a file behind.
"""

from __future__ import annotations

import datetime
import ipaddress
import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

CA_VALIDITY = datetime.timedelta(days=3650)
LEAF_VALIDITY = datetime.timedelta(days=365)
RENEW_BEFORE = datetime.timedelta(days=30)
# Backdating not_before absorbs small clock differences between the machine that issues and the one that verifies.
BACKDATE = datetime.timedelta(minutes=5)

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
NODE_USER_PREFIX = "system:node:"
NODES_GROUP = "system:nodes"


@dataclass(frozen=True)
class CertificateAuthority:
    """The cluster CA, loaded: it signs every other certificate and is every client's trust anchor."""

    cert: x509.Certificate
    key: ec.EllipticCurvePrivateKey
    cert_path: Path
    key_path: Path


@dataclass(frozen=True)
class KeyPair:
    """A certificate signed by the cluster CA and its private key, both as files on disk."""

    cert: x509.Certificate
    cert_path: Path
    key_path: Path


def ensure_ca(pki_dir: Path, common_name: str = "kubernetes", *,
              now: datetime.datetime | None = None) -> CertificateAuthority:
    """Load `ca.crt`/`ca.key` from `pki_dir`, creating (or replacing an expiring) CA when needed."""
    now = now or _utcnow()
    cert_path, key_path = pki_dir / "ca.crt", pki_dir / "ca.key"
    loaded = _load_pair(cert_path, key_path)
    if loaded is not None:
        cert, key = loaded
        if cert.not_valid_after_utc - RENEW_BEFORE > now:
            return CertificateAuthority(cert, key, cert_path, key_path)
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    builder = (
        _builder(name, key.public_key(), now, CA_VALIDITY)
        .issuer_name(name)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(_key_usage(cert_sign=True), critical=True)
    )
    cert = builder.sign(key, hashes.SHA256())
    _write_pair(pki_dir, cert_path, cert, key_path, key)
    return CertificateAuthority(cert, key, cert_path, key_path)


def ensure_serving_cert(pki_dir: Path, ca: CertificateAuthority, name: str, *, common_name: str,
                        ip_addresses: Iterable[IPAddress], dns_names: Iterable[str],
                        now: datetime.datetime | None = None) -> KeyPair:
    """Load or issue `<name>.crt`/`<name>.key`: a TLS server certificate valid for exactly these SANs."""
    ips, dns = list(dict.fromkeys(ip_addresses)), list(dict.fromkeys(dns_names))
    wanted = _subject(common_name, ())

    def fits(cert: x509.Certificate) -> bool:
        return cert.subject == wanted and _sans(cert) == (set(ips), set(dns))

    san = x509.SubjectAlternativeName([*map(x509.DNSName, dns), *map(x509.IPAddress, ips)])
    return _ensure_leaf(pki_dir, ca, name, wanted, ExtendedKeyUsageOID.SERVER_AUTH, fits, san, now)


def ensure_client_cert(pki_dir: Path, ca: CertificateAuthority, name: str, *, user: str,
                       groups: Sequence[str] = (), now: datetime.datetime | None = None) -> KeyPair:
    """Load or issue `<name>.crt`/`<name>.key`: a client certificate for `user` in `groups` (CN and Os)."""
    wanted = _subject(user, groups)
    return _ensure_leaf(pki_dir, ca, name, wanted, ExtendedKeyUsageOID.CLIENT_AUTH,
                        lambda cert: cert.subject == wanted, None, now)


def ensure_node_client_cert(pki_dir: Path, ca: CertificateAuthority, node_name: str, *,
                            now: datetime.datetime | None = None) -> KeyPair:
    """Load or issue `kubelet-<node>.crt`/`.key`: the kubelet identity `system:node:<node>` in
    `system:nodes`, which the node authorizer limits to that node's own objects."""
    return ensure_client_cert(pki_dir, ca, f"kubelet-{node_name}", user=f"{NODE_USER_PREFIX}{node_name}",
                              groups=(NODES_GROUP,), now=now)


def ensure_service_account_key(pki_dir: Path) -> tuple[Path, Path]:
    """Load or create `sa.key` (PKCS#8) and `sa.pub` (its public key), as kubeadm names them: the apiserver
    signs service-account tokens with the first and verifies them with the second. A pair that is missing,
    unreadable or mismatched is replaced, which invalidates every token issued before.

    A new key is ECDSA P-256, like every other key mkpy makes (kubeadm's `encryptionAlgorithm: ECDSA-P256`):
    its tokens are ES256, which kube and JWT libraries verify as they do RS256. Signing is what a TokenRequest
    costs (every pod's token volume asks for one), ~40 µs against ~260 µs for RSA 2048; verifying costs a
    little more (~110 against ~70 µs), but the apiserver remembers a verified token for 10 s. An RSA pair
    made by an older mkpy, or given by the user, is kept and keeps signing RS256."""
    key_path, pub_path = pki_dir / "sa.key", pki_dir / "sa.pub"
    try:
        key = serialization.load_pem_private_key(key_path.read_bytes(), password=None)
        public = serialization.load_pem_public_key(pub_path.read_bytes())
        if isinstance(key, rsa.RSAPrivateKey | ec.EllipticCurvePrivateKey) and key.public_key() == public:
            return key_path, pub_path
    except (OSError, ValueError, TypeError):
        pass
    key = ec.generate_private_key(ec.SECP256R1())
    pki_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    write_file(key_path, key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()), mode=0o600)
    public_pem = key.public_key().public_bytes(serialization.Encoding.PEM,
                                               serialization.PublicFormat.SubjectPublicKeyInfo)
    write_file(pub_path, public_pem, mode=0o644)
    return key_path, pub_path


def apiserver_sans(advertise_address: str, service_cluster_ip_range: str) -> tuple[list[IPAddress], list[str]]:
    """The IP and DNS SANs the apiserver is reached by: loopback, the advertise address, the `kubernetes`
    Service's ClusterIP (the first address of the service range) and that Service's DNS names."""
    ips: list[IPAddress] = [ipaddress.ip_address("127.0.0.1"), ipaddress.ip_address("::1")]
    if advertise_address:
        ips.append(ipaddress.ip_address(advertise_address))
    ips.append(first_service_ip(service_cluster_ip_range))
    dns = ["localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc",
           "kubernetes.default.svc.cluster.local"]
    return list(dict.fromkeys(ips)), dns


def first_service_ip(service_cluster_ip_range: str) -> IPAddress:
    """The ClusterIP of the `kubernetes` Service: the range's network address plus one (10.96.0.1)."""
    network = ipaddress.ip_network(service_cluster_ip_range, strict=False)
    return network.network_address + 1


def pem(cert: x509.Certificate) -> bytes:
    """A certificate as PEM bytes (what kubeconfig's `*-data` fields hold, base64-encoded)."""
    return cert.public_bytes(serialization.Encoding.PEM)


def write_file(path: Path, data: bytes, *, mode: int) -> None:
    """Atomically replace `path` with `data`, created with `mode` (a key is never briefly world-readable)."""
    tmp = path.with_name(f".{path.name}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    with os.fdopen(fd, "wb") as file:
        os.fchmod(fd, mode)  # O_CREAT's mode is filtered by the umask and ignored for an existing file
        file.write(data)
    os.replace(tmp, path)


def _ensure_leaf(pki_dir: Path, ca: CertificateAuthority, name: str, subject: x509.Name,
                 usage: x509.ObjectIdentifier, fits: Callable[[x509.Certificate], bool],
                 san: x509.SubjectAlternativeName | None,
                 now: datetime.datetime | None) -> KeyPair:
    now = now or _utcnow()
    cert_path, key_path = pki_dir / f"{name}.crt", pki_dir / f"{name}.key"
    loaded = _load_pair(cert_path, key_path)
    if loaded is not None:
        cert, _ = loaded
        if fits(cert) and _issued_by(cert, ca) and cert.not_valid_after_utc - RENEW_BEFORE > now:
            return KeyPair(cert, cert_path, key_path)
    key = ec.generate_private_key(ec.SECP256R1())
    builder = (
        _builder(subject, key.public_key(), now, LEAF_VALIDITY)
        .issuer_name(ca.cert.subject)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(_key_usage(cert_sign=False), critical=True)
        .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca.key.public_key()), critical=False)
    )
    if san is not None:
        builder = builder.add_extension(san, critical=False)
    cert = builder.sign(ca.key, hashes.SHA256())
    _write_pair(pki_dir, cert_path, cert, key_path, key)
    return KeyPair(cert, cert_path, key_path)


def _builder(subject: x509.Name, public_key: ec.EllipticCurvePublicKey, now: datetime.datetime,
             validity: datetime.timedelta) -> x509.CertificateBuilder:
    return (
        x509.CertificateBuilder()
        .subject_name(subject)
        .public_key(public_key)
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - BACKDATE)
        .not_valid_after(now + validity)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(public_key), critical=False)
    )


def _key_usage(*, cert_sign: bool) -> x509.KeyUsage:
    return x509.KeyUsage(
        digital_signature=True, content_commitment=False, key_encipherment=False, data_encipherment=False,
        key_agreement=False, key_cert_sign=cert_sign, crl_sign=cert_sign, encipher_only=False,
        decipher_only=False,
    )


def _subject(common_name: str, organizations: Sequence[str]) -> x509.Name:
    # One RDN per attribute: kube (and Python's getpeercert) read every O as a separate group.
    attributes = [x509.NameAttribute(NameOID.ORGANIZATION_NAME, group) for group in organizations]
    return x509.Name([*attributes, x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _sans(cert: x509.Certificate) -> tuple[set[IPAddress], set[str]]:
    try:
        san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        return set(), set()
    return set(san.get_values_for_type(x509.IPAddress)), set(san.get_values_for_type(x509.DNSName))


def _issued_by(cert: x509.Certificate, ca: CertificateAuthority) -> bool:
    try:
        cert.verify_directly_issued_by(ca.cert)
    except (ValueError, TypeError, InvalidSignature):
        return False
    return True


def _load_pair(cert_path: Path, key_path: Path) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey] | None:
    """The certificate and key on disk if both parse and belong together; None means 'issue anew'."""
    try:
        cert = x509.load_pem_x509_certificate(cert_path.read_bytes())
        key = serialization.load_pem_private_key(key_path.read_bytes(), password=None)
    except (OSError, ValueError, TypeError):
        return None
    if not isinstance(key, ec.EllipticCurvePrivateKey) or key.public_key() != cert.public_key():
        return None
    return cert, key


def _write_pair(pki_dir: Path, cert_path: Path, cert: x509.Certificate, key_path: Path,
                key: ec.EllipticCurvePrivateKey) -> None:
    pki_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    key_pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption())
    # The key goes first: a crash between the two renames leaves a mismatched pair, which _load_pair
    # detects and replaces on the next start.
    write_file(key_path, key_pem, mode=0o600)
    write_file(cert_path, pem(cert), mode=0o644)


def _utcnow() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)
