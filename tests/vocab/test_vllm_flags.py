"""The `vllm serve` options of each release (vocab/releases/vllm_flags.json) and how a release reads argv, checked
against facts read by hand in the wheels (file:line of the release named) and in CPython's argparse (3.11
Lib/argparse.py). scripts/vllm_flags.py --check compares the whole table with each release's own parser."""

import pytest

from kvcalc.vocab.errors import UnsupportedError
from kvcalc.vocab.releases import vllm
from kvcalc.vocab.releases.vllm_flags import (
    closest,
    config_tokens,
    flags_of,
    human_readable_int,
    normalise,
    releases,
    resolve,
    rewrite,
)


def options(release):
    """The distinct options of a release (each once, whatever its spellings)."""
    return {info.name: info for info in flags_of(release).values()}


def test_the_table_holds_every_release_kvcalc_models():
    # vocab/releases/vllm.py RELEASES: every release on PyPI from 0.14.0 to 0.33.0 (`pip index versions vllm`).
    assert releases() == vllm.RELEASES


@pytest.mark.parametrize("release,count", [
    # Counted with grep in the wheels (add_argument calls, plus FrontendArgs' annotated fields, plus argparse's -h):
    # 0.14.0: sed -n 620,1198p engine/arg_utils.py | grep -c 'add_argument(' -> 154 (EngineArgs.add_cli_args);
    #   sed -n 2041,2064p -> 2 (AsyncEngineArgs); make_arg_parser in entrypoints/openai/cli_args.py -> 3 ("--");
    #   FrontendArgs fields (grep -cE '^    [a-z_0-9]+: ') -> 45; 154 + 2 + 3 + 45 + 1 = 205.
    ("0.14.0", 205),
    # 0.33.0: engine/arg_utils.py 959-1971 -> 253; 3250-3272 -> 1; entrypoints/common/cli_args.py make_arg_parser
    #   -> 4 (--headless, --api-server-count, --config, --grpc); BaseFrontendArgs 32 + FrontendArgs 30 fields;
    #   253 + 1 + 4 + 32 + 30 + 1 = 321.
    ("0.33.0", 321),
])
def test_option_count_counted_by_hand(release, count):
    assert len(options(release)) == count


def test_max_seq_len_to_capture_is_refused_by_every_release_read():
    # 0.10.2 engine/arg_utils.py:532 model_group.add_argument("--max-seq-len-to-capture", ...); 0.11.0's
    # arg_utils.py has no such option, nor has any release from 0.14.0 on (grep -rn max_seq_len_to_capture: none).
    for release in releases():
        assert resolve(release, "--max-seq-len-to-capture") is None, release


@pytest.mark.parametrize("flag,kind,type_,choices", [
    # Flags kvcalc used to stop at. 0.14.0 engine/arg_utils.py:703 (0.33.0:1047) "--enable-sleep-mode" from
    # config/model.py:273 `enable_sleep_mode: bool` -> BooleanOptionalAction.
    ("--enable-sleep-mode", "bool_optional", "", None),
    # arg_utils.py:927 (0.33.0:1409); config/cache.py:34,79 `PrefixCachingHashAlgo = Literal["sha256",
    # "sha256_cbor", "xxhash", "xxhash_cbor"]` (0.33.0:177,259): choices, sorted.
    ("--prefix-caching-hash-algo", "value", "str", ("sha256", "sha256_cbor", "xxhash", "xxhash_cbor")),
    # arg_utils.py:971 (0.33.0:1512); config/multimodal.py:95 `mm_processor_cache_gb: float = Field(default=4, ...)`.
    ("--mm-processor-cache-gb", "value", "float", None),
    # arg_utils.py:1177 (0.33.0:1903); config/vllm.py:203 `structured_outputs_config: StructuredOutputsConfig`, a
    # dataclass: get_kwargs' parse_dataclass reads the value as JSON.
    ("--structured-outputs-config", "value", "json", None),
    # arg_utils.py:1181 "--optimization-level" (what -O3 becomes, below).
    ("--optimization-level", "value", "str", None),
])
def test_flags_kvcalc_used_to_refuse(flag, kind, type_, choices):
    for release in ("0.14.0", "0.33.0"):
        info = flags_of(release)[flag]
        assert info.kind == kind, release
        assert info.type == type_, release
        assert info.choices == choices, release


@pytest.mark.parametrize("flag,last,first_without", [
    # 0.27.1 engine/arg_utils.py:1218 "--calculate-kv-scales"; 0.28.0 arg_utils.py: none.
    ("--calculate-kv-scales", "0.27.1", "0.28.0"),
    # 0.17.1 engine/arg_utils.py:951 cache_group.add_argument("--swap-space", ...); 0.18.0: none.
    ("--swap-space", "0.17.1", "0.18.0"),
    # 0.16.0 engine/arg_utils.py:2088 "--disable-log-requests" (deprecated=True at :2092); 0.17.0: none.
    ("--disable-log-requests", "0.16.0", "0.17.0"),
])
def test_option_removed(flag, last, first_without):
    assert flag in flags_of(last)
    assert flag not in flags_of(first_without)


def test_disable_log_requests_was_deprecated():
    # 0.16.0 engine/arg_utils.py:2088-2092: BooleanOptionalAction, deprecated=True (a warning, still accepted).
    info = flags_of("0.16.0")["--disable-log-requests"]
    assert info.marks == "deprecated"
    assert info.kind == "bool_optional"


@pytest.mark.parametrize("flag,first,before", [
    # 0.19.0 engine/arg_utils.py:1010 "--kv-cache-dtype-skip-layers"; 0.18.1: none.
    ("--kv-cache-dtype-skip-layers", "0.19.0", "0.18.1"),
    # 0.19.0 engine/arg_utils.py:1304 "--speculative-config", "-sc"; 0.18.1 arg_utils.py:1267 without "-sc".
    ("-sc", "0.19.0", "0.18.1"),
    # 0.33.0 utils/argparse_utils.py:120-146 EnableDisableAction (registered for BooleanOptionalAction at :179):
    # --enable-X gains --disable-X; 0.32.0 has argparse's own BooleanOptionalAction (--no-X only).
    ("--disable-prefix-caching", "0.33.0", "0.32.0"),
])
def test_option_added(flag, first, before):
    assert flag in flags_of(first)
    assert flag not in flags_of(before)


def test_kv_offloading_size_in_every_release_read():
    # 0.14.0 engine/arg_utils.py:946 and 0.33.0:1453 cache_group.add_argument("--kv-offloading-size", ...); the
    # option exists since 0.11.1 (arg_utils.py:936), not in 0.11.0: within the table, its first release is 0.14.0.
    # Its type: config/cache.py `kv_offloading_size: float | None` (0.14.0:152, 0.33.0:383) -> float, optional.
    for release in releases():
        info = flags_of(release)["--kv-offloading-size"]
        assert info.type == "optional(float)", release
        assert info.takes_value, release


def test_enable_prefix_caching_is_boolean_optional_action():
    # 0.14.0 config/cache.py:77 `enable_prefix_caching: bool = True`; engine/arg_utils.py:290 get_kwargs gives a
    # bool field action=argparse.BooleanOptionalAction; added at arg_utils.py:920. argparse.py:901-907 adds --no-X.
    info = flags_of("0.14.0")["--enable-prefix-caching"]
    assert info.kind == "bool_optional"
    assert info.negatives == ("--no-enable-prefix-caching",)
    assert flags_of("0.14.0")["--no-enable-prefix-caching"] is info
    # 0.33.0 utils/argparse_utils.py:131-138: the inverse --disable-X joins the negatives.
    assert flags_of("0.33.0")["--enable-prefix-caching"].negatives == (
        "--disable-prefix-caching", "--no-enable-prefix-caching")


def test_explicit_false_to_a_boolean_optional_action_is_left_for_the_caller_to_refuse():
    # `--enable-prefix-caching=false`: argparse matches the option with the explicit argument 'false' and, the action
    # taking no value, stops: "ignored explicit argument 'false'" (argparse.py:2037-2041).
    m = resolve("0.19.1", "--enable-prefix-caching=false")
    assert m.value == "false"
    assert not m.info.takes_value
    assert resolve("0.19.1", "--no-enable-prefix-caching").negated


def test_disable_log_stats_is_a_plain_switch():
    # 0.14.0 engine/arg_utils.py:1186-1188 "--disable-log-stats", action="store_true".
    assert flags_of("0.14.0")["--disable-log-stats"].kind == "store_true"


def test_hf_token_takes_an_optional_value():
    # 0.14.0 engine/arg_utils.py:684-687 "--hf-token", type=str, nargs="?", const=True.
    assert flags_of("0.14.0")["--hf-token"].nargs == "?"


@pytest.mark.parametrize("release,alias,name", [
    ("0.14.0", "-tp", "--tensor-parallel-size"),  # 0.14.0 engine/arg_utils.py:782
    ("0.33.0", "-tp", "--tensor-parallel-size"),  # 0.33.0 engine/arg_utils.py:1209
    ("0.14.0", "-q", "--quantization"),  # 0.14.0 engine/arg_utils.py:653
    ("0.19.0", "-sc", "--speculative-config"),  # 0.19.0 engine/arg_utils.py:1304
])
def test_aliases(release, alias, name):
    assert flags_of(release)[alias].name == name


def test_no_release_has_an_O_option():
    # -O was --compilation-config's alias up to 0.11.2 (engine/arg_utils.py:1149); from 0.12.0 (:1138) the option
    # is --optimization-level and -O only a token rewrite (below): no release in the table registers -O.
    for release in releases():
        assert "-O" not in flags_of(release), release


@pytest.mark.parametrize("argv,expected", [
    # utils/argparse_utils.py 0.14.0:247-251 (0.33.0:395-399): a token starting with -O (not -O itself) becomes
    # --optimization-level and the rest (after a '=' if there is one).
    (["M", "-O3"], ["M", "--optimization-level", "3"]),
    (["M", "-O=3"], ["M", "--optimization-level", "3"]),
    # :252-258: -O followed by 0, 1, 2 or 3.
    (["M", "-O", "2"], ["M", "--optimization-level", "2"]),
    # anything else after a bare -O: left alone, so argparse refuses -O ('unrecognized arguments: -O 4').
    (["M", "-O", "4"], ["M", "-O", "4"]),
    # the dotted compilation-config form of <= 0.11.2 is no more: the text goes to --optimization-level as it is.
    (["M", "-O.mode=3"], ["M", "--optimization-level", ".mode=3"]),
])
def test_O_forms(argv, expected):
    for release in ("0.14.0", "0.33.0"):
        assert rewrite(release, argv) == expected


@pytest.mark.parametrize("spelling,expected", [
    # utils/argparse_utils.py 0.14.0:231-246: pattern (?<=--)[^\.]* on the key (before any '='): underscores up to
    # the first '.' become dashes; single-dash tokens are left alone.
    ("--max_model_len=4_096", "--max-model-len=4_096"),
    ("--kv_transfer_config.kv_connector_extra_config", "--kv-transfer-config.kv_connector_extra_config"),
    ("--no-enable_prefix_caching", "--no-enable-prefix-caching"),
    ("-tp", "-tp"),
])
def test_underscore_rule(spelling, expected):
    assert normalise("0.19.1", spelling) == expected


def test_abbreviations_follow_argparse():
    # argparse.py:2261-2275 and 2298-2309 (allow_abbrev, never turned off by vLLM): a unique prefix of a long
    # spelling matches it; several: 'ambiguous option'.
    assert resolve("0.19.1", "--enable-prefix").spelling == "--enable-prefix-caching"
    with pytest.raises(ValueError, match="ambiguous option: --enable could match"):
        resolve("0.19.1", "--enable")


def test_two_character_option_takes_an_attached_value():
    # argparse.py:2311-2323: -qfp8 is -q (a two-character option) with the value fp8; -tp2 matches nothing ('-t' is
    # no option and no spelling starts with '-tp2').
    m = resolve("0.19.1", "-qfp8")
    assert m.spelling == "-q"
    assert m.value == "fp8"
    assert resolve("0.19.1", "-tp2") is None


@pytest.mark.parametrize("release,flag,choices", [
    # config/cache.py 0.14.0:35 KVOffloadingBackend = Literal["native", "lmcache"]; engine/arg_utils.py:175
    # literal_to_kwargs sorts the options.
    ("0.14.0", "--kv-offloading-backend", ("lmcache", "native")),
    # 0.17.1 config/cache.py:22 BlockSize = Literal[1, 8, 16, 32, 64, 128, 256] (`block_size:
    # SkipValidation[BlockSize]` :42): int choices, accepted as their text.
    ("0.17.1", "--block-size", ("1", "8", "16", "32", "64", "128", "256")),
    # 0.18.0 config/cache.py:36 `block_size: SkipValidation[int]`: any integer.
    ("0.18.0", "--block-size", None),
    # 0.14.0 config/cache.py:24-32 CacheDType, sorted.
    ("0.14.0", "--kv-cache-dtype", ("auto", "bfloat16", "fp8", "fp8_ds_mla", "fp8_e4m3", "fp8_e5m2", "fp8_inc")),
    # 0.33.0 config/cache.py:235 `cache_dtype: CacheDType | str`: with str, literal_to_kwargs sets a metavar, not
    # choices: argparse accepts any text.
    ("0.33.0", "--kv-cache-dtype", None),
])
def test_choices(release, flag, choices):
    assert flags_of(release)[flag].choices == choices


def test_none_for_an_optional_literal_from_0_31_0():
    # config/multimodal.py 0.31.0:222 `mm_encoder_attn_dtype: Literal["fp8"] | None`; engine/arg_utils.py 0.30.0:414
    # appends the text "None" to the choices, but optional_type (:169) turns "None" and "" into None, not a choice:
    # refused. 0.31.0:432 appends None itself: both texts accepted.
    assert flags_of("0.30.0")["--mm-encoder-attn-dtype"].choices == ("fp8",)
    assert flags_of("0.31.0")["--mm-encoder-attn-dtype"].choices == ("fp8", "None", "")


def test_human_readable_int():
    # 0.33.0 utils/argparse_utils.py:42-74 (unchanged from 0.14.0 engine/arg_utils.py:2075-2118): decimal
    # suffixes int(float(number) * 10^3k), binary ones int(number) * 2^10k, a decimal with a binary suffix refused.
    assert human_readable_int("25.6k") == 25600
    assert human_readable_int("1K") == 1024
    assert human_readable_int("80G") == 80 * 2**30
    assert human_readable_int("2m") == 2_000_000
    assert human_readable_int("1_000") == 1000  # int() of the plain text
    # through a float, as vLLM does: float("1.001") * 1000 = 1000.9999999999999, int() -> 1000 (not 1001).
    assert human_readable_int("1.001k") == 1000
    with pytest.raises(ValueError, match="Decimals are not allowed"):
        human_readable_int("1.5K")


def test_model_option_beside_a_positional_model_is_a_second_positional():
    # utils/argparse_utils.py 0.14.0:187-219: `--model X` is moved to the front; the positional M then has no
    # place: vLLM stops with 'unrecognized arguments: M' (every release read).
    assert rewrite("0.14.0", ["M", "--model", "X", "-tp", "2"]) == ["X", "M", "-tp", "2"]
    assert rewrite("0.33.0", ["--model=X"]) == ["X"]


def test_served_model_name_without_a_positional_model():
    # 0.17.0 utils/argparse_utils.py:220-232: no positional model, no --config, a --served-model-name: ValueError.
    # 0.16.0 has no such check.
    with pytest.raises(ValueError, match="first positional argument"):
        rewrite("0.17.0", ["--served-model-name", "a", "-tp", "2"])
    assert rewrite("0.16.0", ["--served-model-name", "a"]) == ["--served-model-name", "a"]


def test_dotted_arguments_merge_into_json():
    # utils/argparse_utils.py 0.14.0:314-347: `--x.y v` merged into one `--x '{"y": ...}'` at the end, each value
    # JSON-decoded or kept as text; 0.20.0:407-412 tries human_readable_int before the text.
    argv = ["M", "--kv-transfer-config.kv_connector_extra_config.cpu_bytes_to_use", "80G", "-tp", "2"]
    assert rewrite("0.19.1", argv) == [
        "M", "-tp", "2", "--kv-transfer-config", '{"kv_connector_extra_config": {"cpu_bytes_to_use": "80G"}}']
    assert rewrite("0.20.0", argv)[-1] == '{"kv_connector_extra_config": {"cpu_bytes_to_use": 85899345920}}'


def test_config_file_tokens():
    # utils/argparse_utils.py 0.15.1:478-489: true -> --k, false -> nothing, a list -> --k items, else str(value);
    # 0.16.0:501-505 adds a mapping -> --k and its JSON (0.15.1: str(mapping), which argparse's JSON types refuse).
    data = {"enforce_eager": True, "enable-prefix-caching": False, "compilation-config": {"mode": 3}}
    assert config_tokens("0.16.0", data) == ["--enforce_eager", "--compilation-config", '{"mode": 3}']
    assert config_tokens("0.15.1", data)[-1] == "{'mode': 3}"
    # 0.33.0:654-658: false adds --no-k only when the parser reading the file knows it; for `vllm serve` that is the
    # top-level `vllm` parser (entrypoints/cli/main.py), whose only options are -h and -v: dropped.
    assert config_tokens("0.33.0", {"enable-prefix-caching": False}) == []


def test_config_tokens_go_after_the_positional_model():
    # 0.14.0 utils/argparse_utils.py:428-436: [serve, model] + config args + the rest: the command line wins.
    assert rewrite("0.19.1", ["M", "-tp", "4", "--config", "c.yaml"], config=["--tensor_parallel_size", "2"]) == [
        "M", "--tensor-parallel-size", "2", "-tp", "4"]


def test_closest_spelling():
    assert closest("0.19.1", "--enable_prefix_cachng") == "--enable-prefix-caching"
    assert closest("0.19.1", "--zzzz") is None


def test_a_release_outside_the_table_is_refused():
    with pytest.raises(UnsupportedError, match="0.13.0"):
        flags_of("0.13.0")
