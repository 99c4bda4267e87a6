"""Kubernetes protobuf request bodies (`application/vnd.kubernetes.protobuf`), decoded into JSON objects.

kubectl's typed clients (client-go 0.32 `PrefersProtobuf`) send Create and Update bodies as protobuf:
`kubectl create namespace|deployment|service|configmap|secret|…`, `auth can-i`, `auth whoami`,
`create token`. The apiserver decodes them here and handles the result exactly like a JSON body.

* `decode.py` — the envelope and the Go-to-JSON rules (`decode_protobuf_body`);
* `wire.py` — the protobuf wire format;
* `schema.py` + `schema.json` — field numbers, JSON names and Go facts per message, generated from the
  upstream definitions by `scripts/gen_protobuf_schema.py`.

Usage: `obj = decode_protobuf_body(raw)`; a malformed body raises `APIError` 400 BadRequest.
"""

from .decode import decode_protobuf_body

__all__ = ["decode_protobuf_body"]
