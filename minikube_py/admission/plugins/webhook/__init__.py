"""MutatingAdmissionWebhook and ValidatingAdmissionWebhook: admission decided by the cluster's own HTTPS
webhooks, configured with MutatingWebhookConfiguration and ValidatingWebhookConfiguration objects.

The flow for one request, module by module:

* `config.py`: the configured webhooks, from the watch caches, in calling order;
* `matching.py`: which of them apply (rules, namespace and object selectors, matchPolicy);
* `review.py`: the AdmissionReview sent, the answer checked, and kube's errors;
* `client.py`: the HTTPS POST (url or service, caBundle trust, timeoutSeconds);
* `generic.py`: calling one webhook (dry-run and failurePolicy rules), shared by
* `mutating.py` (one after the other, JSON patches applied in place, reinvocation) and
* `validating.py` (concurrently, refusals only).
"""

from __future__ import annotations

from .mutating import MutatingWebhookPlugin
from .validating import ValidatingWebhookPlugin

__all__ = ["MutatingWebhookPlugin", "ValidatingWebhookPlugin"]
