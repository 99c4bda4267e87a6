"""Images for containerd nodes without a registry: build them offline, import them per node.

* `oci.py`: the OCI image format as files; `LayerBuilder` and `write_archive` make an image archive.
* `builtin.py`: the pause and busybox images every node gets (`PAUSE_IMAGE`, `BUSYBOX_IMAGE`,
  `builtin_images(cache_dir)`).
* `importer.py`: `import_image(socket, archive)` puts an archive into a node's containerd (`mkpy image load`).
"""
