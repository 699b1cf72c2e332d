"""`manage.py profiles export [-o FILE] | import FILE --reason R | history`: the versioned scheduler
configuration as a kubescheduler.config.k8s.io/v1 KubeSchedulerConfiguration."""

import sys

from django.utils import timezone

from scheduler.kubectl import printers as kubectl
from scheduler.engine.config import ConfigError
from scheduler.models import SchedulerConfigVersion
from scheduler.versions.services import config_export, config_version_import


class Command(kubectl.KubectlCommand):
    help = "Export, import and list the versions of the scheduler configuration."

    def add_arguments(self, parser):
        actions = parser.add_subparsers(dest="action", required=True, metavar="{export,import,history}")
        export = actions.add_parser("export", help="write the active version as a KubeSchedulerConfiguration")
        export.add_argument("-o", "--output", default="-", help="file to write (default, or -: standard output)")
        imp = actions.add_parser("import", help="save a KubeSchedulerConfiguration as the next, active version")
        imp.add_argument("file", help="a kubescheduler.config.k8s.io/v1 KubeSchedulerConfiguration (YAML or JSON; -: stdin)")
        imp.add_argument("--reason", required=True, help="why the configuration changes (kept with the version)")
        actions.add_parser("history", help="list the saved versions, newest first")

    def handle(self, *args, action, **options):
        getattr(self, f"_{action}")(**options)

    def _export(self, *, output, **options):
        text = config_export()
        if output == "-":
            self.stdout.write(text, ending="")
            return
        # The whole text is ready before the file is opened: a path that cannot be written is
        # reported (no traceback) and nothing is written.
        try:
            with open(output, "w", encoding="utf-8") as f:
                f.write(text)
        except OSError as e:
            raise kubectl.KubectlError(f"cannot write {output}: {e.strerror or e}") from None

    def _import(self, *, file, reason, **options):
        text = self._read(file)
        try:
            version, warnings = config_version_import(text=text, filename=file, reason=reason)
        except ConfigError as e:
            for path, message in e.problems:
                self.stderr.write(f"{file}: {path}: {message}" if path else f"{file}: {message}")
            raise kubectl.KubectlError() from None
        for warning in warnings:
            self.stderr.write(f"Warning: {file}: {warning}")
        self.stdout.write(f"scheduler configuration version {version.number} saved and active")

    @staticmethod
    def _read(file: str) -> str:
        """The file's text (-: standard input), which must be UTF-8 (as YAML and JSON files are)."""
        try:
            if file == "-":
                stdin = getattr(sys.stdin, "buffer", None)
                data = stdin.read() if stdin is not None else sys.stdin.read()
            else:
                with open(file, "rb") as f:
                    data = f.read()
        except OSError as e:
            raise kubectl.KubectlError(f"cannot read {file}: {e.strerror or e}") from None
        except UnicodeDecodeError as e:  # a text standard input that is not UTF-8
            raise kubectl.KubectlError(f"cannot read {file}: not UTF-8 text ({e.reason} at byte {e.start})") from None
        if isinstance(data, str):
            return data
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as e:
            raise kubectl.KubectlError(f"cannot read {file}: not UTF-8 text ({e.reason} at byte {e.start})") from None

    def _history(self, **options):
        now = timezone.now()
        rows = [[str(v.number), "*" if v.active else "", kubectl.human_duration((now - v.created_at).total_seconds()),
                 v.created_by.get_username() if v.created_by else "(cli)", " ".join(v.reason.split())]
                for v in SchedulerConfigVersion.objects.select_related("created_by")]
        if not rows:
            self.stdout.write("no saved versions: version 0 (the initial configuration) is active")
            return
        self.stdout.write(kubectl.table(["VERSION", "ACTIVE", "AGE", "BY", "REASON"], rows))
