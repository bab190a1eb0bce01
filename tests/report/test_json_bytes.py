"""report/json.dumps writes json.dumps(indent=2, sort_keys=True, ensure_ascii=False)'s bytes: on every JSON
document of the output corpus (tests/corpus.py) and on the values the standard library treats specially."""

import json

import pytest

from kvcalc.report.json import dumps

from corpus import cached_run, commands


def _standard(value) -> str:
    return json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False)


@pytest.mark.parametrize("value", [
    {}, [], {"b": [], "a": {}}, [[[]]], "", "é ü 漢 \u2028 \x00 \" \\ \n", 0, -1, 10**30, 1.5, -0.0, 1e300, 1e-7,
    float("nan"), float("inf"), float("-inf"), True, False, None, {"z": 1, "a": [1, 2.5, None, {"k": "v"}]},
    {1: "int key"}, {"a": 1, "b": (1, 2)}, {True: 1}, {None: 1}, {2.5: "float key"},
])
def test_special_values_encode_as_the_standard_library_does(value):
    assert dumps(value) == _standard(value), f"dumps({value!r})"


def test_every_corpus_json_document_encodes_as_the_standard_library_does():
    checked = 0
    for argv in commands():
        if "json" not in argv:
            continue
        out = cached_run(argv).split("--- stdout\n", 1)[1].split("--- stderr\n", 1)[0]
        try:
            doc = json.loads(out)
        except ValueError:
            continue  # jsonl, or a command whose stdout is empty
        assert dumps(doc) == _standard(doc), f"kvcalc {' '.join(argv)}"
        checked += 1
    assert checked > 300, f"only {checked} JSON documents in the corpus"
