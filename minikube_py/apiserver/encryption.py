"""Encryption at rest: values of chosen resources are encrypted before they reach etcd.

Where it sits: between the registry and the etcd backend. `APIServer.start` wraps its storage with
`with_encryption(storage, --encryption-provider-config, registry)`; every value written under a configured
resource's key prefix (`/registry/secrets/`, ...) is encrypted, every value read is decrypted, and all other
keys pass through untouched. Watch events (their new and previous values) are decrypted the same way.

The configuration is kube's `EncryptionConfiguration` (`apiserver.config.k8s.io/v1`, YAML or JSON):

    resources:
    - resources: [secrets, "*.apps"]          # group-resources; "*.<group>", "*." (core) and "*.*" too
      providers:                             # the first encrypts writes; all of them are tried on reads
      - aescbc: {keys: [{name: key1, secret: <base64 of 16, 24 or 32 bytes>}]}
      - aesgcm: {keys: [...]}
      - identity: {}                          # plain values (reads data written before encryption)

Stored values have kube's exact layout, so etcd data moves between mkpy and kube-apiserver:
`k8s:enc:aescbc:v1:<key>:` + 16-byte IV + AES-CBC ciphertext with PKCS#7 padding;
`k8s:enc:aesgcm:v1:<key>:` + 12-byte nonce + AES-GCM ciphertext and tag, authenticated with the etcd key;
identity: the plain value. Each key of a provider is tried in order, so keys rotate as in kube: put the new
key first, rewrite every object (`kubectl get secrets -A -o json | kubectl replace -f -`), drop the old key.

Usage rules: a bad configuration is an `EncryptionConfigError` whose one-line message names the file and the
problem (`mkpy apiserver` checks it before starting). A stored value no configured provider can read is a
`TransformError`: a 500 `Internal error occurred: unable to transform key ...` for the client, and a storage
failure for the watch cache (which relists until the value is readable or gone).
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import os
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Protocol

import yaml
from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import padding
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM as _GCMCipher

from ..api import errors
from ..api.kinds import Registry
from ..store.errors import ConflictError, StoreError
from ..store.interface import KeyValue, ListResult, Storage, WatchEvent

API_VERSION = "apiserver.config.k8s.io/v1"
KIND = "EncryptionConfiguration"
ENCRYPTED_PREFIX = b"k8s:enc:"
AES_KEY_SIZES = (16, 24, 32)
SUPPORTED_PROVIDERS = ("aescbc", "aesgcm", "identity")
KUBE_ONLY_PROVIDERS = ("secretbox", "kms")  # valid in kube, not implemented here


class EncryptionConfigError(ValueError):
    """The encryption configuration cannot be used; the message names the file and the problem."""


class TransformError(errors.APIError, StoreError):
    """A stored value no configured provider can read: a 500 for the client (APIError), a storage failure
    for the watch cache (StoreError)."""

    def __init__(self, key: str, problem: str) -> None:
        super().__init__(500, "InternalError", f'Internal error occurred: unable to transform key "{key}": {problem}')


class ProviderError(Exception):
    """One provider could not read a value (wrong key, tampered data); the next provider is tried."""


class Transformer(Protocol):
    def to_storage(self, data: bytes, key: str) -> bytes:
        """`data` as stored (without the provider prefix); `key` is the etcd key, for authenticated data."""

    def from_storage(self, data: bytes, key: str) -> bytes:
        """The plain value of `data` (prefix already stripped); raises ProviderError."""


class AESCBC:
    """kube's aescbc provider: a random 16-byte IV, then AES-CBC with PKCS#7 padding."""

    def __init__(self, secret: bytes) -> None:
        self._algorithm = algorithms.AES(secret)

    def to_storage(self, data: bytes, key: str) -> bytes:
        iv = os.urandom(16)
        padder = padding.PKCS7(128).padder()
        encryptor = Cipher(self._algorithm, modes.CBC(iv)).encryptor()
        return iv + encryptor.update(padder.update(data) + padder.finalize()) + encryptor.finalize()

    def from_storage(self, data: bytes, key: str) -> bytes:
        if len(data) < 16:
            raise ProviderError("the stored data was shorter than the required size")
        iv, body = data[:16], data[16:]
        if len(body) % 16:
            raise ProviderError("the stored data is not a multiple of the block size")
        decryptor = Cipher(self._algorithm, modes.CBC(iv)).decryptor()
        plain = decryptor.update(body) + decryptor.finalize()
        unpadder = padding.PKCS7(128).unpadder()
        try:
            return unpadder.update(plain) + unpadder.finalize()
        except ValueError:  # a wrong key shows up as bad padding
            raise ProviderError("invalid padding on input") from None


class AESGCM:
    """kube's aesgcm provider: a random 12-byte nonce, then AES-GCM (ciphertext + tag) with the etcd key as
    authenticated data, so a value copied to another key does not decrypt."""

    def __init__(self, secret: bytes) -> None:
        self._cipher = _GCMCipher(secret)

    def to_storage(self, data: bytes, key: str) -> bytes:
        nonce = os.urandom(12)
        return nonce + self._cipher.encrypt(nonce, data, key.encode())

    def from_storage(self, data: bytes, key: str) -> bytes:
        if len(data) < 12:
            raise ProviderError("the stored data was shorter than the required size")
        try:
            return self._cipher.decrypt(data[:12], data[12:], key.encode())
        except InvalidTag:
            raise ProviderError("cipher: message authentication failed") from None


class Identity:
    """Plain values. Reading an encrypted value fails, so the providers after it get their turn."""

    def to_storage(self, data: bytes, key: str) -> bytes:
        return data

    def from_storage(self, data: bytes, key: str) -> bytes:
        if data.startswith(ENCRYPTED_PREFIX):
            raise ProviderError("identity transformer tried to read encrypted data")
        return data


@dataclass(frozen=True)
class PrefixedTransformer:
    prefix: bytes
    transformer: Transformer


class TransformerChain:
    """The providers of one resource, in order: the first writes, the first whose prefix matches and that
    can read a value reads it (kube's prefix transformers)."""

    def __init__(self, transformers: Sequence[PrefixedTransformer]) -> None:
        self.transformers = tuple(transformers)

    def to_storage(self, data: bytes, key: str) -> bytes:
        first = self.transformers[0]
        return first.prefix + first.transformer.to_storage(data, key)

    def from_storage(self, data: bytes, key: str) -> tuple[bytes, bool]:
        """(plain value, stale): stale when a provider other than the writing one read it, so that an
        update rewrites the value with the current key."""
        problems = []
        for index, prefixed in enumerate(self.transformers):
            if not data.startswith(prefixed.prefix):
                continue
            try:
                return prefixed.transformer.from_storage(data[len(prefixed.prefix):], key), index != 0
            except ProviderError as err:
                if prefixed.prefix:  # identity's refusal of encrypted data is not worth reporting
                    problems.append(str(err))
        if not problems:
            raise TransformError(key, "no matching prefix found")
        raise TransformError(key, problems[0] if len(problems) == 1 else "[" + ", ".join(problems) + "]")


# configuration -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class EncryptionConfig:
    """Group-resource → its providers. Keys are (group, resource) with "*" wildcards as in the file."""

    chains: dict[tuple[str, str], TransformerChain]

    def chain_for(self, group: str, resource: str) -> TransformerChain | None:
        """The exact entry, else `*.<group>`, else `*.*` (kube's precedence)."""
        for candidate in ((group, resource), (group, "*"), ("*", "*")):
            chain = self.chains.get(candidate)
            if chain is not None:
                return chain
        return None


def load_encryption_config(path: str | Path) -> EncryptionConfig:
    """Read and check an EncryptionConfiguration file; raises EncryptionConfigError naming `path`."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise EncryptionConfigError(f'cannot read encryption provider configuration file "{path}": {err}') from err
    try:
        return parse_encryption_config(text)
    except EncryptionConfigError as err:
        raise EncryptionConfigError(
            f'error while parsing encryption provider configuration file "{path}": {err}') from None


def parse_encryption_config(text: str) -> EncryptionConfig:
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as err:
        raise EncryptionConfigError(f"error while parsing file: {' '.join(str(err).split())}") from None
    if not isinstance(doc, dict) or doc.get("kind") != KIND or doc.get("apiVersion") != API_VERSION:
        raise EncryptionConfigError(f'expected kind "{KIND}" of apiVersion "{API_VERSION}"')
    entries = doc.get("resources")
    if not isinstance(entries, list) or not entries:
        raise EncryptionConfigError(errors.required("resources", "at least one resources is required").describe())
    chains: dict[tuple[str, str], list[PrefixedTransformer]] = {}
    for i, entry in enumerate(entries):
        path = f"resources[{i}]"
        if not isinstance(entry, dict):
            raise EncryptionConfigError(f"{path}: must be an object with resources and providers")
        names = _resource_names(entry.get("resources"), f"{path}.resources")
        transformers = _providers(entry.get("providers"), f"{path}.providers")
        for group_resource in names:
            _refuse_masked(group_resource, chains)
            chains.setdefault(group_resource, []).extend(transformers)
    return EncryptionConfig({gr: TransformerChain(found) for gr, found in chains.items()})


def _resource_names(names: Any, path: str) -> list[tuple[str, str]]:
    if not isinstance(names, list) or not names:
        raise EncryptionConfigError(errors.required(path, f"at least one {path} is required").describe())
    parsed = []
    for j, name in enumerate(names):
        if not isinstance(name, str) or not name:
            raise EncryptionConfigError(errors.invalid(f"{path}[{j}]", name, "must be a resource name").describe())
        problem = _resource_name_problem(name)
        if problem:
            raise EncryptionConfigError(errors.invalid(f"{path}[{j}]", name, problem).describe())
        resource, _, group = name.partition(".")
        parsed.append((group, resource))
    if len(set(parsed)) != len(parsed):
        raise EncryptionConfigError(errors.invalid(path, names, "the same resource cannot be specified multiple "
                                                                "times").describe())
    if _overlapping(parsed):
        raise EncryptionConfigError(errors.invalid(path, names, "using overlapping resources such as 'secrets' "
                                                   "and '*.' in the same resource list is not allowed as they "
                                                   "will be masked").describe())
    return parsed


def _resource_name_problem(name: str) -> str:
    resource, _, group = name.partition(".")
    if name.lower() != name:
        return "resource name should not contain capital letters"
    if name == "*":
        return "use '*.' to encrypt all the resources from core API group or *.* to encrypt all resources"
    if group == "events.k8s.io":
        return ("'*.events.k8s.io' objects are stored using the 'events' API group in etcd. Use 'events' "
                "instead in the config file")
    if group == "*" and resource != "*":
        return "encrypting the same resource across groups is not supported"
    return ""


def _overlapping(parsed: list[tuple[str, str]]) -> bool:
    """A wildcard next to a resource it covers (`*.` and `secrets`, `*.*` and anything)."""
    for group, resource in parsed:
        others = [other for other in parsed if other != (group, resource)]
        if resource == "*" and others and (group == "*" or any(g == group for g, _ in others)):
            return True
    return False


def _refuse_masked(group_resource: tuple[str, str], chains: dict[tuple[str, str], Any]) -> None:
    """A resource after a `*.<group>` or `*.*` entry would never be used: kube refuses the file."""
    for wildcard in ((group_resource[0], "*"), ("*", "*")):
        if wildcard in chains:
            raise EncryptionConfigError(f'resource "{_gr_name(group_resource)}" is masked by earlier rule '
                                        f'"{_gr_name(wildcard)}"')


def _gr_name(group_resource: tuple[str, str]) -> str:
    group, resource = group_resource
    return resource if not group and resource != "*" else f"{resource}.{group}"


def _providers(providers: Any, path: str) -> list[PrefixedTransformer]:
    if not isinstance(providers, list) or not providers:
        raise EncryptionConfigError(errors.required(path, f"at least one {path} is required").describe())
    transformers: list[PrefixedTransformer] = []
    for j, provider in enumerate(providers):
        transformers.extend(_provider(provider, f"{path}[{j}]"))
    return transformers


def _provider(provider: Any, path: str) -> list[PrefixedTransformer]:
    if not isinstance(provider, dict) or len(provider) != 1:
        detail = ("more than one provider specified in a single element, should split into different list "
                  "elements" if isinstance(provider, dict) and len(provider) > 1 else
                  f"must name exactly one provider ({', '.join(SUPPORTED_PROVIDERS)})")
        raise EncryptionConfigError(f"{path}: {detail}")
    (name, settings), = provider.items()
    if name == "identity":
        return [PrefixedTransformer(b"", Identity())]
    if name in KUBE_ONLY_PROVIDERS:
        raise EncryptionConfigError(f"{path}: provider {name} is not supported by mkpy "
                                    f"(supported: {', '.join(SUPPORTED_PROVIDERS)})")
    if name not in ("aescbc", "aesgcm"):
        raise EncryptionConfigError(errors.not_supported(path, name, list(SUPPORTED_PROVIDERS)).describe())
    keys = settings.get("keys") if isinstance(settings, dict) else None
    keys_path = f"{path}.{name}.keys"
    if not isinstance(keys, list) or not keys:
        raise EncryptionConfigError(errors.required(keys_path, "at least one keys is required").describe())
    make = AESCBC if name == "aescbc" else AESGCM
    return [PrefixedTransformer(f"k8s:enc:{name}:v1:{key_name}:".encode(), make(secret))
            for key_name, secret in (_key(key, f"{keys_path}[{k}]") for k, key in enumerate(keys))]


def _key(key: Any, path: str) -> tuple[str, bytes]:
    if not isinstance(key, dict) or not key.get("name") or not isinstance(key["name"], str):
        raise EncryptionConfigError(errors.required(f"{path}.name", "name is a mandatory field for a key").describe())
    if not key.get("secret") or not isinstance(key["secret"], str):
        raise EncryptionConfigError(
            errors.required(f"{path}.secret", "secret is a mandatory field for a key").describe())
    try:
        secret = base64.b64decode(key["secret"], validate=True)
    except (binascii.Error, ValueError):
        raise EncryptionConfigError(
            errors.invalid(f"{path}.secret", "REDACTED", "secrets must be base64 encoded").describe()) from None
    if len(secret) not in AES_KEY_SIZES:
        sizes = " ".join(str(size) for size in AES_KEY_SIZES)
        raise EncryptionConfigError(errors.invalid(
            f"{path}.secret", "REDACTED",
            f"secret is not of the expected length, got {len(secret)}, expected one of [{sizes}]").describe())
    return key["name"], secret


def new_config_document(key_name: str = "key1") -> str:
    """An EncryptionConfiguration encrypting secrets with a fresh random aescbc key; identity second, so a
    cluster that stored secrets before encryption was turned on can still read them."""
    doc = {"apiVersion": API_VERSION, "kind": KIND, "resources": [{
        "resources": ["secrets"],
        "providers": [{"aescbc": {"keys": [{"name": key_name,
                                             "secret": base64.b64encode(os.urandom(32)).decode()}]}},
                      {"identity": {}}]}]}
    return yaml.safe_dump(doc, sort_keys=False)


def ensure_config_file(path: Path) -> Path:
    """Write `new_config_document()` to `path` (owner-only) unless it exists: the key must outlive restarts."""
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as file:
            file.write(new_config_document())
    return path


# the storage wrapper --------------------------------------------------------------------------------


def with_encryption(storage: Storage, config_file: str, registry: Registry) -> Storage:
    """`storage` itself without a config file, else wrapped in `EncryptedStorage`."""
    if not config_file:
        return storage
    return EncryptedStorage(storage, load_encryption_config(config_file), registry)


class EncryptedStorage:
    """`Storage` that encrypts and decrypts the values of configured resources on the way to `inner`.

    Which resource a key belongs to comes from the kinds registry (`Resource.key_prefix`), re-read when
    custom resources come and go, so `*.*` also covers custom resources. Keys of no resource (allocator
    ranges) are never encrypted, as in kube."""

    def __init__(self, inner: Storage, config: EncryptionConfig, registry: Registry) -> None:
        self.inner = inner
        self.config = config
        self.registry = registry
        self._resources_seen: object = None
        self._by_prefix: dict[str, TransformerChain | None] = {}

    def _chain(self, key: str) -> TransformerChain | None:
        if self.registry.resources is not self._resources_seen:
            self._by_prefix = {}
            for res in self.registry.resources:  # the first version listed for a prefix is its storage home
                self._by_prefix.setdefault(res.key_prefix, self.config.chain_for(res.group, res.plural))
            self._resources_seen = self.registry.resources
        # key prefixes are one or two segments under /registry (`secrets/`, `services/specs/`)
        parts = key.split("/", 5)
        if len(parts) > 4:
            chain = self._by_prefix.get(f"/{parts[1]}/{parts[2]}/{parts[3]}/")
            if chain is not None:
                return chain
        return self._by_prefix.get(f"/{parts[1]}/{parts[2]}/") if len(parts) > 3 else None

    def _read(self, kv: KeyValue) -> KeyValue:
        chain = self._chain(kv.key)
        if chain is None:
            return kv
        value, stale = chain.from_storage(kv.value, kv.key)
        return KeyValue(kv.key, value, kv.create_revision, kv.mod_revision, stale=stale)

    def _write(self, key: str, value: bytes) -> bytes:
        chain = self._chain(key)
        return value if chain is None else chain.to_storage(value, key)

    async def get(self, key: str) -> KeyValue | None:
        kv = await self.inner.get(key)
        return None if kv is None else self._read(kv)

    async def list(self, prefix: str, *, limit: int = 0, start_key: str | None = None,
                   revision: int = 0) -> ListResult:
        result = await self.inner.list(prefix, limit=limit, start_key=start_key, revision=revision)
        return replace(result, items=[self._read(kv) for kv in result.items])

    async def count(self, prefix: str) -> int:
        return await self.inner.count(prefix)

    async def create(self, key: str, value: bytes, *, ttl: int = 0) -> int:
        return await self.inner.create(key, self._write(key, value), ttl=ttl)

    async def update(self, key: str, value: bytes, *, expected_revision: int | None, ttl: int = 0) -> int:
        try:
            return await self.inner.update(key, self._write(key, value), expected_revision=expected_revision,
                                           ttl=ttl)
        except ConflictError as err:
            raise ConflictError(key, err.current and self._read(err.current)) from None

    async def delete(self, key: str, *, expected_revision: int | None = None) -> KeyValue:
        try:
            return self._read(await self.inner.delete(key, expected_revision=expected_revision))
        except ConflictError as err:
            raise ConflictError(key, err.current and self._read(err.current)) from None

    @contextlib.asynccontextmanager
    async def watch(self, prefix: str, *, start_revision: int,
                    prev_kv: bool = True) -> AsyncIterator[AsyncIterator[WatchEvent]]:
        async with self.inner.watch(prefix, start_revision=start_revision, prev_kv=prev_kv) as events:
            yield self._decrypted(events)

    async def _decrypted(self, events: AsyncIterator[WatchEvent]) -> AsyncIterator[WatchEvent]:
        async for event in events:
            if event.kv is not None or event.prev is not None:
                event = replace(event, kv=event.kv and self._read(event.kv),
                                prev=event.prev and self._read(event.prev))
            yield event

    async def current_revision(self) -> int:
        return await self.inner.current_revision()

    async def compact(self, revision: int) -> None:
        await self.inner.compact(revision)

    async def close(self) -> None:
        await self.inner.close()
