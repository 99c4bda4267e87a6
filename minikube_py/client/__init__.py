"""mkpy's client-go: the machinery every component uses to talk to the apiserver and react to changes.

* `kubeconfig`: find the apiserver and credentials (kubeconfig files, in-cluster service account).
* `rest`: an async REST client for any resource, with typed errors (`errors`) and watch streams.
* `resources`: the built-in resources by name, and their URL paths.
* `store`, `listers`: the informer cache (an indexer with secondary indexes) and read-only queries over it.
* `reflector`: keeps a store equal to the server by listing, then watching, and relisting when needed.
* `informer`: shared informers and their factory, delivering add/update/delete to event handlers.
* `clock`, `workqueue`, `ratelimiter`, `controller`: the work queue, its rate limiters and the controller
  worker loop written once.
* `leaderelection`: leader election on coordination.k8s.io Leases.
* `events`: the event recorder (events.k8s.io/v1 and core/v1 Events, with aggregation of repeats).

The flow of a controller: informer (reflector → store → handlers) → handlers enqueue keys → workers pop
keys and `sync` them, reading from listers and writing through the REST client.
"""
