#!/usr/bin/env python3
"""Generate `minikube_py/api/protobuf/schema.json`, the field tables for decoding kube protobuf bodies.

kubectl's typed clients send request bodies as Kubernetes protobuf (see `minikube_py/api/protobuf/decode.py`).
Turning one into the JSON object kube would have produced needs, per message, each field number's JSON name
and type, plus three Go facts: a pointer field keeps an explicit zero (`replicas: 0`), `omitempty` drops a
zero value, and `,inline` flattens an embedded struct into its parent (`Volume.VolumeSource`). They live in
two upstream places, both read here and matched by field number:

* the API package's `generated.proto`: messages, field numbers, scalar / message / repeated / map types;
* the package's Go types (`types.go`, ...): the `json:"name,omitempty"` tag and the `*` of a pointer, on the
  field whose `protobuf:"bytes,<number>,..."` tag carries that number.

A few messages have hand-written JSON forms in Go (Time, Quantity, IntOrString, RawExtension, ...); they
are listed in SPECIALS and decoded by name. Go slice types that proto wraps in a message of `items`
(authentication's ExtraValue) are found in the Go source and marked `items`.

Input: the git repositories of k8s.io/api, k8s.io/apimachinery and k8s.io/apiextensions-apiserver at tag
v0.32.4 (the release of the kubectl 1.32.4 we test against), read with `git show <tag>:<path>`; no upstream
file is copied into this repository. The committed schema.json was generated from the GitHub mirrors of
the three repositories at v0.32.4 (commits recorded in its `source`). Only messages reachable from the kinds
in `minikube_py/api/kinds.py` (with their subresource kinds) and the EXTRA_KINDS below are written.

Regenerate, from the repository root:

    git clone --bare https://github.com/kubernetes/api /tmp/k8s/api
    git clone --bare https://github.com/kubernetes/apimachinery /tmp/k8s/apimachinery
    git clone --bare https://github.com/kubernetes/apiextensions-apiserver /tmp/k8s/apiextensions-apiserver
    .venv/bin/python scripts/gen_protobuf_schema.py --api /tmp/k8s/api --apimachinery /tmp/k8s/apimachinery \\
        --apiextensions-apiserver /tmp/k8s/apiextensions-apiserver --ref v0.32.4
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from minikube_py.api.kinds import RESOURCES

OUTPUT = Path(__file__).resolve().parent.parent / "minikube_py" / "api" / "protobuf" / "schema.json"
REPOS = ("api", "apimachinery", "apiextensions-apiserver")
META = "k8s.io.apimachinery.pkg.apis.meta.v1"
APIEXT = "k8s.io.apiextensions_apiserver.pkg.apis.apiextensions.v1"

# Kinds sent by typed clients that are not resources of their own in kinds.py.
EXTRA_KINDS = (
    ("authentication.k8s.io", "v1", "TokenRequest"),
    ("authentication.k8s.io", "v1", "TokenReview"),
    ("authentication.k8s.io", "v1", "SelfSubjectReview"),
    ("authorization.k8s.io", "v1", "SubjectAccessReview"),
    ("authorization.k8s.io", "v1", "SelfSubjectAccessReview"),
    ("authorization.k8s.io", "v1", "SelfSubjectRulesReview"),
    ("policy", "v1", "Eviction"),
)
# The body of a typed client's DELETE (kubectl drain); kube registers it in every group-version
# (metav1.AddToGroupVersion), so an envelope may name it under any of them.
DELETE_OPTIONS = ("meta.k8s.io", "v1", "DeleteOptions")

# Messages whose JSON form is hand-written in Go, by the decoder's name for that form.
SPECIALS = {
    f"{META}.Time": "time",
    f"{META}.MicroTime": "microtime",
    f"{META}.FieldsV1": "rawjson",
    "k8s.io.apimachinery.pkg.runtime.RawExtension": "rawjson",
    f"{APIEXT}.JSON": "rawjson",
    "k8s.io.apimachinery.pkg.api.resource.Quantity": "quantity",
    "k8s.io.apimachinery.pkg.util.intstr.IntOrString": "intorstring",
    f"{APIEXT}.JSONSchemaPropsOrArray": "schemaorarray",
    f"{APIEXT}.JSONSchemaPropsOrBool": "schemaorbool",
    f"{APIEXT}.JSONSchemaPropsOrStringArray": "schemaorstringarray",
}
SCALARS = ("string", "bytes", "bool", "int32", "int64", "double")


# --- reading the upstream repositories ---------------------------------------------------------------------

@dataclass
class Upstream:
    """Files of the three upstream repositories at one ref, read from their git objects."""

    git_dirs: dict[str, str]
    ref: str

    def _git(self, repo: str, *args: str) -> str:
        return subprocess.run(["git", "-C", self.git_dirs[repo], *args], check=True, capture_output=True,
                              text=True).stdout

    def describe(self) -> str:
        """`k8s.io/api v0.32.4 (3cb6d6c4)`, ... for the schema's `source`."""
        commits = (f"k8s.io/{repo} {self.ref} ({self._git(repo, 'rev-parse', self.ref + '^{commit}')[:8]})"
                   for repo in REPOS)
        return ", ".join(commits)

    def read(self, repo: str, path: str) -> str:
        return self._git(repo, "show", f"{self.ref}:{path}")

    def go_files(self, repo: str, directory: str) -> list[str]:
        names = self._git(repo, "ls-tree", "--name-only", self.ref, directory + "/").split()
        return [n for n in names if n.endswith(".go") and not n.endswith(("_test.go", ".pb.go"))]


def split_import(path: str) -> tuple[str, str]:
    """`k8s.io/api/core/v1/generated.proto` → (`api`, `core/v1/generated.proto`)."""
    _, repo, rest = path.split("/", 2)
    return repo, rest


# --- generated.proto ---------------------------------------------------------------------------------------

@dataclass
class ProtoField:
    number: int
    name: str
    type: str  # as written: a scalar, a relative or a `.full.Name`
    label: str  # optional, repeated or map (then `type` is the value type; keys are strings)


@dataclass
class ProtoFile:
    package: str
    imports: list[str] = field(default_factory=list)
    messages: dict[str, list[ProtoField]] = field(default_factory=dict)  # full name → fields


TOKEN = re.compile(r'"[^"]*"|[A-Za-z_.][\w.]*|\d+|[{}<>;=,]')


class ProtoParser:
    """A parser for the proto2 subset go-to-protobuf writes: package, imports, options, messages, fields."""

    def __init__(self, text: str) -> None:
        text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
        self.tokens = TOKEN.findall(re.sub(r"//[^\n]*", "", text))
        self.pos = 0
        self.file = ProtoFile(package="")

    def next(self) -> str:
        if self.pos >= len(self.tokens):
            raise SyntaxError("unexpected end of .proto file")
        self.pos += 1
        return self.tokens[self.pos - 1]

    def expect(self, token: str) -> None:
        got = self.next()
        if got != token:
            raise SyntaxError(f"expected {token!r}, got {got!r} (token {self.pos})")

    def parse(self) -> ProtoFile:
        while self.pos < len(self.tokens):
            keyword = self.next()
            if keyword == "syntax":
                self.expect("="), self.next(), self.expect(";")
            elif keyword == "option":
                self.next(), self.expect("="), self.next(), self.expect(";")
            elif keyword == "package":
                self.file.package = self.next()
                self.expect(";")
            elif keyword == "import":
                self.file.imports.append(self.next().strip('"'))
                self.expect(";")
            elif keyword == "message":
                self.message(self.file.package)
            else:
                raise SyntaxError(f"unexpected {keyword!r} at top level")
        return self.file

    def message(self, scope: str) -> None:
        full_name = f"{scope}.{self.next()}"
        fields = self.file.messages.setdefault(full_name, [])
        self.expect("{")
        while (keyword := self.next()) != "}":
            if keyword == "message":
                self.message(full_name)
            elif keyword in ("optional", "repeated"):
                fields.append(self.field(keyword, self.next()))
            elif keyword == "map":
                self.expect("<"), self.expect("string"), self.expect(",")
                value_type = self.next()
                self.expect(">")
                fields.append(self.field("map", value_type))
            else:
                raise SyntaxError(f"unexpected {keyword!r} in message {full_name}")

    def field(self, label: str, type_: str) -> ProtoField:
        name = self.next()
        self.expect("=")
        number = int(self.next())
        self.expect(";")
        return ProtoField(number, name, type_, label)


# --- Go types ------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class GoField:
    json_tag: str  # `replicas,omitempty`, `,inline`, `name`
    pointer: bool


STRUCT = re.compile(r"^type (\w+) struct \{\n(.*?)^\}", re.M | re.S)
SLICE_TYPE = re.compile(r"^type (\w+) \[\]\w+$", re.M)
TAG = re.compile(r'(\w+):"([^"]*)"')
PROTOBUF_NUMBER = re.compile(r"\w+,(\d+),")


def parse_go_structs(text: str) -> dict[str, dict[int, GoField]]:
    """Struct name → protobuf field number → the Go field's json tag and pointer-ness."""
    structs: dict[str, dict[int, GoField]] = {}
    for match in STRUCT.finditer(text):
        fields = structs.setdefault(match.group(1), {})
        for line in match.group(2).splitlines():
            if "`" not in line or line.lstrip().startswith("//"):
                continue
            declaration, tag = line.split("`")[:2]
            tags = dict(TAG.findall(tag))
            number = PROTOBUF_NUMBER.match(tags.get("protobuf", ""))
            if number and "json" in tags:
                go_type = declaration.split()[-1]
                fields[int(number.group(1))] = GoField(tags["json"], go_type.startswith("*"))
    return structs


def parse_go_slice_types(text: str) -> set[str]:
    """Names of Go slice types (`type ExtraValue []string`): proto wraps them in a message of `items`."""
    return set(SLICE_TYPE.findall(text))


# --- the schema ------------------------------------------------------------------------------------------------

class SchemaBuilder:
    """Loads .proto files and Go types on demand and writes the tables for the messages reachable from roots."""

    def __init__(self, upstream: Upstream) -> None:
        self.upstream = upstream
        self.files: dict[str, ProtoFile] = {}  # import path → parsed file
        self.messages: dict[str, list[ProtoField]] = {}
        self.package_dir: dict[str, tuple[str, str]] = {}  # proto package → (repo, directory)
        self.go_structs: dict[str, dict[str, dict[int, GoField]]] = {}
        self.go_slices: dict[str, set[str]] = {}

    def load(self, import_path: str) -> ProtoFile:
        if import_path not in self.files:
            repo, path = split_import(import_path)
            proto = ProtoParser(self.upstream.read(repo, path)).parse()
            self.files[import_path] = proto
            self.messages.update(proto.messages)
            self.package_dir[proto.package] = (repo, path.rsplit("/", 1)[0])
            for dependency in proto.imports:
                self.load(dependency)
        return self.files[import_path]

    def resolve(self, type_: str, scope: str) -> str:
        """A field type as written → a scalar or a message's full name (proto's innermost-scope-first rule)."""
        if type_ in SCALARS:
            return type_
        if type_.startswith("."):
            return type_[1:]
        parts = scope.split(".")
        for end in range(len(parts), 0, -1):
            candidate = ".".join(parts[:end] + [type_])
            if candidate in self.messages:
                return candidate
        raise KeyError(f"unknown type {type_} in {scope}")

    def go_package(self, package: str) -> tuple[dict[str, dict[int, GoField]], set[str]]:
        if package not in self.go_structs:
            repo, directory = self.package_dir[package]
            structs: dict[str, dict[int, GoField]] = {}
            slices: set[str] = set()
            for path in self.upstream.go_files(repo, directory):
                text = self.upstream.read(repo, path)
                structs.update(parse_go_structs(text))
                slices |= parse_go_slice_types(text)
            self.go_structs[package], self.go_slices[package] = structs, slices
        return self.go_structs[package], self.go_slices[package]

    def fields(self, name: str) -> tuple[dict[str, list[str]], str | None]:
        """One message's table (number → [json tag, type]) and its special JSON form, if any."""
        package, _, short = name.rpartition(".")
        structs, slices = self.go_package(package)
        special = SPECIALS.get(name) or ("items" if short in slices else None)
        table = {}
        for f in sorted(self.messages[name], key=lambda f: f.number):
            target = self.resolve(f.type, name)
            if special:
                go = GoField(f.name, pointer=True)  # keep everything on the wire; the special form decides
            elif f.number in structs.get(short, {}):
                go = structs[short][f.number]
            else:
                raise KeyError(f"{name}: no Go field carries protobuf number {f.number} ({f.name})")
            table[str(f.number)] = [go.json_tag, go_type(f.label, target, go.pointer)]
        return table, special

    def build(self, kinds: dict[str, dict[str, str]]) -> dict[str, object]:
        messages: dict[str, dict[str, list[str]]] = {}
        specials: dict[str, str] = {}
        pending = [name for by_kind in kinds.values() for name in by_kind.values()]
        while pending:
            name = pending.pop()
            if name in messages:
                continue
            messages[name], special = self.fields(name)
            if special:
                specials[name] = special
            pending += [element_type(t) for _, t in messages[name].values() if element_type(t) not in SCALARS]
        return {"source": self.upstream.describe(),
                "kinds": kinds, "specials": dict(sorted(specials.items())),
                "messages": dict(sorted(messages.items()))}


def go_type(label: str, target: str, pointer: bool) -> str:
    """The field's type in Go notation over proto names: `*int32`, `[]string`, `map[string]<message>`."""
    if label == "repeated":
        return "[]" + target
    if label == "map":
        return "map[string]" + target
    return ("*" if pointer else "") + target


def element_type(type_: str) -> str:
    return type_.removeprefix("map[string]").removeprefix("[]").removeprefix("*")


def proto_import(group: str, version: str) -> str:
    """Where a group-version's messages are: `apps` → k8s.io/api/apps/v1/generated.proto."""
    if group == "meta.k8s.io":
        return f"k8s.io/apimachinery/pkg/apis/meta/{version}/generated.proto"
    if group == "apiextensions.k8s.io":
        return f"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/{version}/generated.proto"
    return f"k8s.io/api/{group.split('.')[0] or 'core'}/{version}/generated.proto"


def root_kinds() -> list[tuple[str, str, str]]:
    roots = [*EXTRA_KINDS, DELETE_OPTIONS]
    for res in RESOURCES:
        if not {"create", "update", "patch"} & set(res.verbs):
            continue  # read only (metrics.k8s.io): no request carries one
        roots.append((res.group, res.version, res.kind))
        roots += [(sub.group, sub.version, sub.kind) for sub in res.subresources if sub.group or sub.version]
    return roots


def build_schema(upstream: Upstream) -> dict[str, object]:
    builder = SchemaBuilder(upstream)
    kinds: dict[str, dict[str, str]] = {}
    for group, version, kind in root_kinds():
        package = builder.load(proto_import(group, version)).package
        api_version = f"{group}/{version}" if group else version
        kinds.setdefault(api_version, {})[kind] = f"{package}.{kind}"
    delete_options = f"{builder.load(proto_import(*DELETE_OPTIONS[:2])).package}.{DELETE_OPTIONS[2]}"
    for by_kind in kinds.values():
        by_kind[DELETE_OPTIONS[2]] = delete_options
    kinds = {gv: dict(sorted(by_kind.items())) for gv, by_kind in sorted(kinds.items())}
    return builder.build(kinds)


def dump(schema: dict[str, object]) -> str:
    """JSON with one entry per line (an apiVersion's kinds, a message): diffs show what changed."""
    sections = []
    for key, value in schema.items():
        if isinstance(value, dict):
            entries = ",\n".join(f"  {json.dumps(k)}: {json.dumps(v, separators=(',', ':'))}"
                                  for k, v in value.items())
            sections.append(f" {json.dumps(key)}: {{\n{entries}\n }}")
        else:
            sections.append(f" {json.dumps(key)}: {json.dumps(value)}")
    return "{\n" + ",\n".join(sections) + "\n}\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    for repo in REPOS:
        parser.add_argument(f"--{repo}", required=True, help=f"git directory of k8s.io/{repo}")
    parser.add_argument("--ref", default="v0.32.4", help="tag or commit to read (default v0.32.4)")
    parser.add_argument("--output", type=Path, default=OUTPUT)
    args = parser.parse_args()
    git_dirs = {repo: getattr(args, repo.replace("-", "_")) for repo in REPOS}
    schema = build_schema(Upstream(git_dirs, args.ref))
    args.output.write_text(dump(schema))
    print(f"wrote {args.output} ({len(schema['messages'])} messages)")  # type: ignore[arg-type]


if __name__ == "__main__":
    main()
