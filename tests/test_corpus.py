"""The output corpus (tests/corpus.py) against its recorded digests: a refactor changes no byte of any output."""

import json
import os


import corpus

DIGESTS = os.path.join(os.path.dirname(__file__), "golden", "corpus.sha256.json")


def _recorded() -> dict:
    if not os.path.exists(DIGESTS):
        return {}
    with open(DIGESTS, encoding="utf-8") as fh:
        return json.load(fh)


def test_corpus_digests():
    current = {" ".join(cmd): corpus.digest(corpus.cached_run(cmd)) for cmd in corpus.commands()}
    if os.environ.get("KVCALC_UPDATE_GOLDEN"):
        with open(DIGESTS, "w", encoding="utf-8") as fh:
            json.dump(current, fh, indent=0, sort_keys=True)
            fh.write("\n")
    recorded = _recorded()
    assert recorded, "no recorded corpus digests: run with KVCALC_UPDATE_GOLDEN=1"
    changed = sorted(cmd for cmd in current if recorded.get(cmd) != current[cmd])
    missing = sorted(set(recorded) - set(current))
    # Names every command whose output changed; `python tests/corpus.py DIR` in two checkouts shows how.
    assert not changed, f"{len(changed)} command(s) changed output, e.g. kvcalc {changed[:5]}"
    assert not missing, f"commands left the corpus: {missing[:5]}"
