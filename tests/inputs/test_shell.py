"""A container's command read as Kubernetes and `sh -c` run it (inputs/serve/shell.py). The expected words are what a
POSIX shell gives for each script (checked by running the same scripts under /bin/sh with `printf '%s\\n' "$@"` in
place of the server: test_the_scripts_agree_with_a_real_shell)."""

import os
import shutil
import subprocess

import pytest

from kvcalc.inputs.serve.argv import k8s_expand, shell_script, unwrap
from kvcalc.inputs.serve.shell import run_script, split_script


def commands(script, env=None, unknown=None, params=()):
    return run_script(split_script("m.yaml", "args", script), env or {}, unknown or {}, list(params))


def server(script, **kw):
    """The words of the one command that names `vllm`, after its wrappers."""
    hits = [c for c in commands(script, **kw) if any(os.path.basename(w) == "vllm" for w in c.words)]
    assert len(hits) == 1, [c.words for c in commands(script, **kw)]
    return unwrap(hits[0].words)[0], hits[0]


# Each script and the words its vllm command gets.
SCRIPTS = [
    # A `|` block with backslash continuations, set -e and exec (the shape of most Helm charts' vLLM containers).
    ("set -e\nexec vllm serve /models/m \\\n  --tensor-parallel-size 4 \\\n  --max-model-len 32768\n",
     ["vllm", "serve", "/models/m", "--tensor-parallel-size", "4", "--max-model-len", "32768"]),
    # CRLF line ends (a manifest saved on Windows).
    ("vllm serve m \\\r\n  --block-size 16\r\n", ["vllm", "serve", "m", "--block-size", "16"]),
    # An && chain: only the server's words; a comment; a redirection and a pipe into tee.
    ("pip install lmcache && vllm serve m --port 8000 2>&1 | tee /tmp/log  # serve\n",
     ["vllm", "serve", "m", "--port", "8000"]),
    # JSON in single quotes across lines stays one word.
    ("vllm serve m --kv-transfer-config '{\"kv_connector\": \"OffloadingConnector\",\n \"kv_role\": \"kv_both\"}'",
     ["vllm", "serve", "m", "--kv-transfer-config",
      '{"kv_connector": "OffloadingConnector",\n "kv_role": "kv_both"}']),
    # Double quotes keep an expansion one word; outside quotes it splits on blanks.
    ('ARGS="--block-size 32 --seed 1"\nvllm serve "$MODEL" $ARGS',
     ["vllm", "serve", "org/m x", "--block-size", "32", "--seed", "1"]),
    # Defaults and alternatives.
    ("vllm serve ${MODEL_ID:-org/default} --max-model-len ${LEN:-4096}${SUFFIX:+k}",
     ["vllm", "serve", "org/default", "--max-model-len", "4096"]),
    # A trailing & and wait: the server runs in the background.
    ("vllm serve m &\nwait", ["vllm", "serve", "m"]),
]


@pytest.mark.parametrize("script, words", SCRIPTS)
def test_scripts(script, words):
    got, _ = server(script, env={"MODEL": "org/m x"})
    assert got == words


def test_the_scripts_agree_with_a_real_shell(tmp_path):
    """The expected words above are /bin/sh's: each script runs with `vllm` a function printing its arguments."""
    sh = shutil.which("sh")
    if sh is None:
        pytest.skip("no /bin/sh")
    for script, words in SCRIPTS:
        # exec is a special built-in (no function replaces it): dropped; tee passes the words through.
        prog = ("vllm() { printf '%s\\0' vllm \"$@\"; }\npip() { :; }\ntee() { cat; }\n"
                + script.replace("\r", "").replace("exec ", ""))
        out = subprocess.run([sh, "-c", prog], env={"MODEL": "org/m x", "PATH": os.environ["PATH"]},
                             capture_output=True, check=False).stdout.decode()
        assert [w for w in out.split("\0") if w] == words, script


def test_prefix_assignments_reach_the_server_process_only():
    # LMCACHE_CHUNK_SIZE=512 in front of the command is in the server's environment; X=1 alone is a shell
    # variable (not exported); export makes it one.
    _, cmd = server("X=1\nexport Y=2\nLMCACHE_CHUNK_SIZE=512 vllm serve m\n", env={"HF_HOME": "/cache"})
    assert cmd.env["LMCACHE_CHUNK_SIZE"] == "512"
    assert cmd.env["Y"] == "2"
    assert cmd.env["HF_HOME"] == "/cache"
    assert "X" not in cmd.env


def test_env_wrapper_and_exec():
    words, added = unwrap(("exec", "env", "VLLM_USE_V1=1", "/usr/local/bin/vllm", "serve", "m"))
    assert words == ["/usr/local/bin/vllm", "serve", "m"]
    assert added == {"VLLM_USE_V1": "1"}


def test_positional_parameters_of_sh_c():
    # command: ["/bin/sh", "-ec", "exec vllm serve \"$@\"", "--"], args: [...]: $0 is "--", "$@" the rest.
    argv = ["/bin/sh", "-ec", 'exec vllm serve "$@"', "--", "m", "--served-model-name", "my model"]
    script, params = shell_script(argv)
    assert params[0] == "--"
    words, _ = server(script, params=params)
    assert words == ["vllm", "serve", "m", "--served-model-name", "my model"]


def test_shell_options_before_c():
    assert shell_script(["bash", "-o", "pipefail", "-xc", "vllm serve m"]) == ("vllm serve m", [])
    assert shell_script(["/bin/bash", "-c", "--", "vllm serve m"]) == ("vllm serve m", [])
    assert shell_script(["vllm", "serve", "m"]) is None
    assert shell_script(["sh", "/entrypoint.sh"]) is None  # a script file: nothing to read


def test_unknown_values_are_named_not_guessed():
    _, cmd = server("vllm serve m --host $(hostname -i) --max-model-len ${LEN}", unknown={"LEN": "from ConfigMap"})
    assert cmd.unknown["$(hostname -i)"] == "a command substitution kvcalc does not run"
    assert cmd.unknown["${LEN}"] == "from ConfigMap"


def test_kubernetes_expansion():
    # k8s expand.go: $(VAR) replaced when defined, kept as written when not; $$ is a literal $.
    env = {"MODEL": "org/m", "TP": "4"}
    assert k8s_expand("--model=$(MODEL)", env) == "--model=org/m"
    assert k8s_expand("$(NOPE) $$(MODEL) $TP", env) == "$(NOPE) $(MODEL) $TP"
    assert k8s_expand("$(unterminated", env) == "$(unterminated"


@pytest.mark.parametrize("script, what", [
    ("vllm serve 'm", "an unterminated ' quote"),
    ('vllm serve "m', 'an unterminated " quote'),
    ("vllm serve m <<EOF\nx\nEOF", "a here-document"),
])
def test_scripts_kvcalc_cannot_read_are_one_line(script, what):
    with pytest.raises(Exception, match=what):
        split_script("m.yaml", "args", script)


# Issue 34: the script's control flow. Where the shell decides a setting from what kvcalc can know, it is followed
# (each script checked under /bin/sh below); where it cannot (a test of a file, a loop, a branch), the variable is
# unknown with the reason, never taken from one branch.

# (script, $0 $1 …, the server's words, its exported variables: name -> value, None when the server does not get it)
FOLLOWED = [
    # set -- rewrites the positional parameters the server gets through "$@".
    ('set -- "$@" --kv-offloading-size 64\nexec vllm serve "$@"', ["sh", "m"],
     ["vllm", "serve", "m", "--kv-offloading-size", "64"], {}),
    ('set -- m --tensor-parallel-size 4\nshift\nvllm serve m "$@"', ["sh"],
     ["vllm", "serve", "m", "--tensor-parallel-size", "4"], {}),
    # A subshell's export is gone after its `)`; a group's is the shell's own.
    ("( export A=1 )\n{ export B=2; }\nvllm serve m", [], ["vllm", "serve", "m"], {"A": None, "B": "2"}),
    # set -a exports every assignment until set +a.
    ("set -a\nA=1\nset +a\nB=2\nvllm serve m", [], ["vllm", "serve", "m"], {"A": "1", "B": None}),
    # && and || after commands whose status is known (assignments and true/false built-ins).
    ("true && export A=1\nfalse && export B=2\nfalse || export C=3\nexport D=4 && vllm serve m", [],
     ["vllm", "serve", "m"], {"A": "1", "B": None, "C": "3", "D": "4"}),
    # A pipeline's commands and a background command run in subshells of their own.
    ("export A=1 | cat\nexport B=2 &\nwait\nvllm serve m", [], ["vllm", "serve", "m"], {"A": None, "B": None}),
]


@pytest.mark.parametrize("script, params, words, env", FOLLOWED)
def test_control_flow_kvcalc_can_follow(script, params, words, env):
    got, cmd = server(script, params=params)
    assert got == words
    for name, value in env.items():
        assert cmd.env.get(name) == value, name
        assert name not in cmd.env_unknown


def test_the_followed_control_flow_agrees_with_a_real_shell():
    sh = shutil.which("sh")
    if sh is None:
        pytest.skip("no /bin/sh")
    for script, params, words, env in FOLLOWED:
        # `vllm` prints its arguments, then what a child process (exported variables only) sees of each name.
        names = " ".join(env)
        prog = ("vllm() { printf '%s\\0' vllm \"$@\"; for n in " + names + "; do sh -c 'eval \"printf \\\"%s\\\\0\\\" "
                "\\\"$0=\\${$0-unset}\\\"\"' \"$n\"; done; }\n" + script.replace("exec ", ""))
        out = subprocess.run([sh, "-c", prog, *params], env={"PATH": os.environ["PATH"]}, capture_output=True,
                             check=False).stdout.decode()
        got = [w for w in out.split("\0") if w]
        assert got[:len(words)] == words, script
        assert got[len(words):] == [f"{n}={'unset' if v is None else v}" for n, v in env.items()], script


# (script, the variable the server may or may not get)
DECIDED = [
    ("test -f /etc/vllm/on && export LMCACHE_MAX_LOCAL_CPU_SIZE=100\nvllm serve m", "LMCACHE_MAX_LOCAL_CPU_SIZE"),
    ("[ -f /x ] || export A=1\nvllm serve m", "A"),
    ('if [ -n "$GPU" ]; then\n  export A=1\nfi\nvllm serve m', "A"),
    ("export A=0\nif [ -f /x ]; then :; else unset A; fi\nvllm serve m", "A"),
    ("for f in a b; do export A=$f; done\nvllm serve m", "A"),
    ("while [ ! -f /ready ]; do export A=1; sleep 1; done\nvllm serve m", "A"),
    ("case \"$ROLE\" in\n  prefill) export A=1 ;;\n  *) ;;\nesac\nvllm serve m", "A"),
]


@pytest.mark.parametrize("script, name", DECIDED)
def test_control_flow_kvcalc_cannot_know_makes_the_variable_unknown(script, name):
    _, cmd = server(script, env={"GPU": "1", "ROLE": "decode"})
    assert name not in cmd.env
    assert "control flow decides" in cmd.env_unknown[name]


def test_a_set_the_control_flow_decides_leaves_the_parameters_unknown():
    # `[ -f /x ] && set -- …`: "$@" may be the script's words or the new ones.
    _, cmd = server('[ -f /x ] && set -- --kv-offloading-size 64\nexec vllm serve m "$@"', params=["sh", "--seed", "1"])
    assert "control flow decides" in cmd.unknown["${@}"]


@pytest.mark.parametrize("line, simple", [
    ("export VLLM_USE_SIMPLE_KV_OFFLOAD=1; vllm serve {m} --kv-offloading-size 8", True),
    ("export VLLM_USE_SIMPLE_KV_OFFLOAD=1 && cd / && vllm serve {m} --kv-offloading-size 8", True),
    ("env -i VLLM_USE_SIMPLE_KV_OFFLOAD=1 {vllm} serve {m} --kv-offloading-size 8", True),
    ("VLLM_USE_SIMPLE_KV_OFFLOAD=1 env -i {vllm} serve {m} --kv-offloading-size 8", False),
    ("export VLLM_USE_SIMPLE_KV_OFFLOAD=1; env -u VLLM_USE_SIMPLE_KV_OFFLOAD {vllm} serve {m} --kv-offloading-size 8",
     False),
])
def test_a_serve_line_with_shell_around_it_is_run_as_the_shell_runs_it(capsys, tmp_path, line, simple):
    # `export …;` and `env -i` on --serve: the export was dropped (the words before `vllm` ignored) and env -i's
    # clearing read as nothing. Which connector --kv-offloading-size starts is VLLM_USE_SIMPLE_KV_OFFLOAD's: checked
    # against /bin/sh running the line with a `vllm` that prints the variable.
    import json

    from conftest import ROOT_DIR, run

    model = tmp_path / "llama"
    model.mkdir()
    shutil.copy(os.path.join(ROOT_DIR, "tests", "fixtures", "models", "llama-3.1-8b.json"), model / "config.json")
    fake = tmp_path / "bin" / "vllm"
    fake.parent.mkdir()
    fake.write_text('#!/bin/sh\nprintf "%s" "${VLLM_USE_SIMPLE_KV_OFFLOAD-unset}"\n')
    fake.chmod(0o755)
    text = line.format(m=model, vllm=fake) if "{vllm}" in line else line.format(m=model).replace("vllm serve",
                                                                                                  f"{fake} serve")
    shown = subprocess.run(["sh", "-c", text], capture_output=True, check=False).stdout.decode()
    assert (shown == "1") == simple
    code, out, err = run(capsys, "plan", "--serve", text, "--vllm-version", "0.33.0", "--format", "json")
    assert code == 0, err
    assert json.loads(out)["offload"]["backend"] == ("simple" if simple else "native")
