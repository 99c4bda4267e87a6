"""Streaming for exec, attach, port-forward: the protocols kubectl, the apiserver, kubelets and runtimes speak.

A command or a forwarded port travels three hops, each over an upgraded HTTP connection:

    kubectl / Python client ──WebSocket v5|v4, SPDY-in-WebSocket, or SPDY──▶ apiserver (pods/exec, ...)
    apiserver ──SPDY/3.1 over HTTPS, client certificate──▶ kubelet (/exec/{ns}/{pod}/{container}, ...)
    kubelet ──SPDY/3.1 to the single-use URL CRI Exec/Attach/PortForward returned──▶ runtime streaming server

Modules, from the wire up:
* `channels`: the WebSocket channel protocol (channel bytes, the final Status, terminal sizes);
* `spdy`: SPDY/3.1 frames and header compression; `session`: streams multiplexed over one connection;
* `transport`: byte streams a session runs over (a socket, a WebSocket used as a pipe);
* `remotecommand`: a command's streams as channel messages over any transport, and `bridge`;
* `portforward`: forwarded connections as data/error pipes over SPDY or WebSocket channels;
* `upgrade`: HTTP upgrades to SPDY (client, and a Starlette response for servers);
  `uvicorn_protocols`: what uvicorn needs for that (and for client certificates on WebSockets);
* `endpoints`: serving a request over whichever protocol the client chose; `proxy`: passing it on.

This package knows nothing of the apiserver or the kubelet; both import it.
"""
