"""An import-linter contract type for what test modules may do and production modules may not.

import-linter's own `forbidden` contract cannot leave out test modules (its ignore wildcards replace whole
module names, and our tests sit beside the code as test_*.py). This one checks every module under
`source_modules` except test modules (test_*, conftest) and the `harness_modules` packages: none of them
may import a module under `forbidden_modules`, directly. `allowed_imports` names the exceptions, one
"importer -> imported" per line, each with its reason in the config file.
"""

from __future__ import annotations

from importlinter import Contract, ContractCheck, fields, output


def _under(module: str, packages) -> bool:
    return any(module == p or module.startswith(p + ".") for p in packages)


def _is_test(module: str) -> bool:
    last = module.rsplit(".", 1)[-1]
    return last.startswith("test_") or last == "conftest"


class ProductionImportsContract(Contract):
    type_name = "production_imports"

    source_modules = fields.ListField(subfield=fields.StringField())
    forbidden_modules = fields.ListField(subfield=fields.StringField())
    harness_modules = fields.ListField(subfield=fields.StringField(), required=False)
    allowed_imports = fields.ListField(subfield=fields.StringField(), required=False)

    def check(self, graph, verbose: bool) -> ContractCheck:
        harness = list(self.harness_modules or [])
        allowed = {tuple(part.strip() for part in line.split("->")) for line in (self.allowed_imports or [])}
        targets: set[str] = set()
        for forbidden in self.forbidden_modules:
            if forbidden in graph.modules:
                targets.add(forbidden)
                targets |= graph.find_descendants(forbidden) if not graph.is_module_squashed(forbidden) else set()
        violations = []
        for target in sorted(targets):
            for importer in sorted(graph.find_modules_that_directly_import(target)):
                if not _under(importer, self.source_modules) or _under(importer, self.forbidden_modules):
                    continue
                if _is_test(importer) or _under(importer, harness) or (importer, target) in allowed:
                    continue
                lines = [d["line_number"] for d in graph.get_import_details(importer=importer, imported=target)]
                violations.append((importer, target, lines))
        return ContractCheck(kept=not violations, metadata={"violations": violations})

    def render_broken_contract(self, check: ContractCheck) -> None:
        for importer, target, lines in check.metadata["violations"]:
            where = ", ".join(f"l.{n}" for n in lines)
            output.print_error(f"{importer} imports {target} ({where})")
