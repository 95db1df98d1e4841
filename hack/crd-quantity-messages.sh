#!/usr/bin/env bash
# crd-quantity-messages.sh - drop resource.Quantity's schema pattern from the CRD fields that validate their
# size with CEL instead (a rule `isQuantity(string(self))` with a message saying "use 256Mi or 1Gi"). The
# pattern's own message shows the raw regular expression, and controller-gen cannot leave it out. Fields
# without such a rule (corev1 resource lists) keep it. Run by `make generate` after controller-gen.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
for f in "$root"/config/crd/bases/*.yaml; do
  awk '
    function indent(s) { match(s, /^ */); return RLENGTH }
    function flush(keep) {
      if (held == "") return
      if (keep) print held
      for (i = 1; i <= n; i++) print buf[i]
      held = ""; n = 0
    }
    {
      if (held != "") {
        if (indent($0) < heldIndent) { flush(!sized); } else {
          buf[++n] = $0
          if ($0 ~ /rule: isQuantity\(string\(self\)\)$/) sized = 1
          next
        }
      }
      if ($0 ~ /^ *pattern: \^\(\\\+\|-\)\?\(\(\[0-9\]\+/) { held = $0; heldIndent = indent($0); n = 0; sized = 0; next }
      print
    }
    END { flush(!sized) }
  ' "$f" >"$f.tmp"
  mv "$f.tmp" "$f"
done
