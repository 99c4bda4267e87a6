"""Cron schedules, checked the way kube's CronJob validation checks them (robfig/cron's standard parser).

The parsing is `api/cron.py`'s, the one the CronJob controller computes run times with; `schedule_errors`
returns the parser's own message, which kube puts verbatim into `spec.schedule: Invalid value: "...":
<message>`. A `TZ=`/`CRON_TZ=` prefix is stripped first: the CronJob validation refuses it with its own
message.
"""

from __future__ import annotations

from minikube_py.api.cron import CronError, parse


def schedule_errors(schedule: str) -> list[str]:
    if schedule.startswith(("TZ=", "CRON_TZ=")):
        schedule = schedule[schedule.find(" "):].strip() if " " in schedule else ""
    try:
        parse(schedule)
    except CronError as exc:
        return [str(exc)]
    return []
