"""Encryption at rest: kube's value layout, key rotation and EncryptionConfiguration checks."""

from __future__ import annotations

import base64

import pytest
from cryptography.hazmat.primitives import padding
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from minikube_py.apiserver.encryption import (
    EncryptionConfigError,
    TransformError,
    load_encryption_config,
    new_config_document,
    parse_encryption_config,
)

KEY = "/registry/secrets/default/s1"
SECRET1 = bytes(range(32))
SECRET2 = bytes(range(32, 64))


def b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode()


def config(*providers: str, resources: str = "[secrets]") -> str:
    return ("apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n"
            f"- resources: {resources}\n  providers:\n" + "".join(f"  - {p}\n" for p in providers))


def aescbc(name: str, secret: bytes) -> str:
    return f"aescbc: {{keys: [{{name: {name}, secret: {b64(secret)}}}]}}"


def aesgcm(name: str, secret: bytes) -> str:
    return f"aesgcm: {{keys: [{{name: {name}, secret: {b64(secret)}}}]}}"


def secrets_chain(text: str):  # type: ignore[no-untyped-def]
    chain = parse_encryption_config(text).chain_for("", "secrets")
    assert chain is not None
    return chain


def test_aescbc_values_have_kubes_layout() -> None:
    stored = secrets_chain(config(aescbc("key1", SECRET1))).to_storage(b'{"kind":"Secret"}', KEY)
    prefix = b"k8s:enc:aescbc:v1:key1:"
    assert stored.startswith(prefix)
    iv, body = stored[len(prefix):len(prefix) + 16], stored[len(prefix) + 16:]
    assert len(body) % 16 == 0
    decryptor = Cipher(algorithms.AES(SECRET1), modes.CBC(iv)).decryptor()
    unpadder = padding.PKCS7(128).unpadder()
    plain = unpadder.update(decryptor.update(body) + decryptor.finalize()) + unpadder.finalize()
    assert plain == b'{"kind":"Secret"}'


def test_aesgcm_values_have_kubes_layout_and_are_bound_to_their_key() -> None:
    chain = secrets_chain(config(aesgcm("k", SECRET1[:16])))
    stored = chain.to_storage(b"data", KEY)
    prefix = b"k8s:enc:aesgcm:v1:k:"
    nonce, sealed = stored[len(prefix):len(prefix) + 12], stored[len(prefix) + 12:]
    assert AESGCM(SECRET1[:16]).decrypt(nonce, sealed, KEY.encode()) == b"data"
    with pytest.raises(TransformError, match="message authentication failed"):
        chain.from_storage(stored, "/registry/secrets/default/other")


@pytest.mark.parametrize("provider", [aescbc("a", SECRET1), aesgcm("b", SECRET1[:24])])
def test_every_provider_round_trips(provider: str) -> None:
    chain = secrets_chain(config(provider))
    assert chain.from_storage(chain.to_storage(b"x" * 100, KEY), KEY) == (b"x" * 100, False)


def test_encrypting_twice_gives_different_values() -> None:
    chain = secrets_chain(config(aescbc("key1", SECRET1)))
    assert chain.to_storage(b"same", KEY) != chain.to_storage(b"same", KEY)


def test_identity_writes_plain_values_and_hands_encrypted_ones_to_the_next_provider() -> None:
    old = secrets_chain(config(aescbc("key1", SECRET1))).to_storage(b"secret", KEY)
    chain = secrets_chain(config("identity: {}", aescbc("key1", SECRET1)))
    assert chain.to_storage(b"plain", KEY) == b"plain"
    assert chain.from_storage(old, KEY) == (b"secret", True)


def test_rotation_reads_old_values_as_stale_and_writes_with_the_new_key() -> None:
    old = secrets_chain(config(aescbc("key1", SECRET1))).to_storage(b"v", KEY)
    rotated = secrets_chain(config(f"aescbc: {{keys: [{{name: key2, secret: {b64(SECRET2)}}}, "
                                   f"{{name: key1, secret: {b64(SECRET1)}}}]}}"))
    assert rotated.from_storage(old, KEY) == (b"v", True)
    assert rotated.to_storage(b"v", KEY).startswith(b"k8s:enc:aescbc:v1:key2:")
    only_new = secrets_chain(config(aescbc("key2", SECRET2)))
    with pytest.raises(TransformError, match=f'unable to transform key "{KEY}": no matching prefix found'):
        only_new.from_storage(old, KEY)


def test_a_key_of_the_right_name_but_wrong_secret_is_reported() -> None:
    old = secrets_chain(config(aescbc("key1", SECRET1))).to_storage(b"v", KEY)
    with pytest.raises(TransformError, match="invalid padding on input|not a multiple"):
        secrets_chain(config(aescbc("key1", SECRET2))).from_storage(old, KEY)


def test_plain_data_is_unreadable_without_identity() -> None:
    with pytest.raises(TransformError, match="no matching prefix found") as err:
        secrets_chain(config(aescbc("key1", SECRET1))).from_storage(b'{"kind":"Secret"}', KEY)
    assert err.value.code == 500 and err.value.message.startswith("Internal error occurred: ")


def test_wildcards_cover_a_group_or_everything_and_exact_names_win() -> None:
    cfg = parse_encryption_config(config(aescbc("k", SECRET1), resources="['*.apps']") + "- resources: ['*.*']\n"
                                  "  providers:\n  - identity: {}\n")
    assert cfg.chain_for("apps", "deployments") is cfg.chains[("apps", "*")]
    assert cfg.chain_for("", "configmaps") is cfg.chains[("*", "*")]
    assert parse_encryption_config(config(aescbc("k", SECRET1))).chain_for("", "configmaps") is None


def test_the_default_document_encrypts_secrets_with_a_fresh_32_byte_key_and_reads_plain_ones() -> None:
    first, second = parse_encryption_config(new_config_document()), parse_encryption_config(new_config_document())
    chain = first.chain_for("", "secrets")
    assert chain is not None and chain.to_storage(b"s", KEY).startswith(b"k8s:enc:aescbc:v1:key1:")
    assert chain.from_storage(b"plain", KEY) == (b"plain", True)
    assert first.chain_for("", "secrets").to_storage(b"s", KEY)[23:] != second.chain_for("", "secrets").to_storage(b"s", KEY)[23:]  # type: ignore[union-attr]


BAD = [
    ("an unknown provider is refused", config("rot13: {}"), 'Unsupported value: "rot13"'),
    ("a provider kube has but mkpy lacks is named", config("secretbox: {keys: []}"), "provider secretbox is not supported"),
    ("two providers in one element are refused", config("{identity: {}, aescbc: {keys: []}}"),
     "more than one provider specified in a single element"),
    ("a secret that is not base64 is refused", config("aescbc: {keys: [{name: k, secret: '***'}]}"),
     "secrets must be base64 encoded"),
    ("a key of the wrong length is refused", config(f"aescbc: {{keys: [{{name: k, secret: {b64(b'short')}}}]}}"),
     "secret is not of the expected length, got 5, expected one of [16 24 32]"),
    ("a provider without keys is refused", config("aesgcm: {keys: []}"), "aesgcm.keys: Required value"),
    ("a key without a name is refused", config(f"aescbc: {{keys: [{{secret: {b64(SECRET1)}}}]}}"),
     "name is a mandatory field for a key"),
    ("a resource listed twice in one entry is refused", config("identity: {}", resources="[secrets, secrets]"),
     "the same resource cannot be specified multiple times"),
    ("a wildcard next to a resource it covers is refused", config("identity: {}", resources="['*.', secrets]"),
     "overlapping resources"),
    ("a bare star is refused", config("identity: {}", resources="['*']"), "use '*.' to encrypt all the resources"),
    ("capital letters are refused", config("identity: {}", resources="[Secrets]"), "capital letters"),
    ("an entry masked by an earlier wildcard is refused",
     config("identity: {}", resources="['*.*']") + "- resources: [secrets]\n  providers:\n  - identity: {}\n",
     'resource "secrets" is masked by earlier rule "*.*"'),
    ("an entry without providers is refused", config(resources="[secrets]"), "providers: Required value"),
    ("another kind is refused", "apiVersion: v1\nkind: ConfigMap\n", 'expected kind "EncryptionConfiguration"'),
    ("bad YAML is refused", "resources: [", "error while parsing file"),
]


@pytest.mark.parametrize(("text", "message"), [case[1:] for case in BAD], ids=[case[0] for case in BAD])
def test_bad_configurations_are_one_line_errors_naming_the_file(tmp_path, text: str, message: str) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "enc.yaml"
    path.write_text(text)
    with pytest.raises(EncryptionConfigError) as err:
        load_encryption_config(path)
    assert message in str(err.value)
    assert str(path) in str(err.value) and "\n" not in str(err.value)


def test_an_unreadable_file_is_a_clear_error(tmp_path) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(EncryptionConfigError, match="cannot read encryption provider configuration file"):
        load_encryption_config(tmp_path / "missing.yaml")
