"""mkpy's kube-controller-manager: the control loops that turn desired state into actual state.

    app.py           the process: flags, leader election, /healthz, starting the enabled controllers
    registry.py      which controllers exist and which `--controllers` turns on
    context.py       what each controller is built from (its client, recorder, the shared informers)
    clientbuilder.py each controller's own ServiceAccount credentials
    controllers/     one module per controller, all in the same shape (see minikube_py/client/controller.py)
"""
