"""The cloud-controller-manager: the controllers that need a cloud, run against a pluggable cloud provider.

`cloud/` holds the provider contract (interface.py), the registry that finds providers by name, and the two
built-in providers: `local` (a cloud simulated on this machine whose load balancers carry real traffic) and
`fake` (records calls, for unit tests). `controllers/` holds the cloud-node, cloud-node-lifecycle, service
(load balancer) and route controllers; app.py assembles them into the `mkpy ccm` process.
"""
