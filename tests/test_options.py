"""Glue-style job arguments: both spellings, both forms, and every bad-input message."""
import pytest

from sparkmark.core.errors import ConfigError
from sparkmark.core.options import DISABLE, ENABLE, PAUSE, argv_to_dict, parse_job_args


@pytest.mark.parametrize("args", [
    {"job_bookmark_option": "job-bookmark-enable", "JOB_NAME": "orders"},
    {"--job-bookmark-option": "job-bookmark-enable", "--JOB_NAME": "orders"},
    {"job-bookmark-option": "job-bookmark-enable", "JOB_NAME": "orders"},
    ["--job-bookmark-option", "job-bookmark-enable", "--JOB_NAME", "orders"],
    ["script.py", "--job-bookmark-option=job-bookmark-enable", "--JOB_NAME=orders"],
])
def test_enable_in_every_spelling(args):
    parsed = parse_job_args(args)
    assert parsed.option == ENABLE and parsed.mode == "enable"
    assert parsed.job_name == "orders"


def test_default_is_disable_as_in_glue():
    assert parse_job_args(None).option == DISABLE
    assert parse_job_args({}).option == DISABLE
    assert parse_job_args([]).mode == "disable"


def test_pause_with_from_and_to():
    p = parse_job_args(["--job-bookmark-option", PAUSE, "--job-bookmark-from", "a1",
                        "--job-bookmark-to", "b2"])
    assert (p.option, p.from_run, p.to_run) == (PAUSE, "a1", "b2")
    assert p.as_config() == {"job_bookmark_option": PAUSE, "job_bookmark_from": "a1",
                             "job_bookmark_to": "b2"}


def test_extra_arguments_are_kept():
    p = parse_job_args(["--job-bookmark-option", ENABLE, "--input", "s3://x", "--verbose"])
    assert p.extra == {"input": "s3://x", "verbose": "true"}


@pytest.mark.parametrize("args, needle", [
    ({"job_bookmark_option": "enable"}, "unknown --job-bookmark-option 'enable'"),
    ({"job_bookmark_option": "job-bookmark-on"}, "use one of job-bookmark-enable"),
    ({"job_bookmark_option": PAUSE, "job_bookmark_from": "r1"},
     "--job-bookmark-from was given without --job-bookmark-to"),
    ({"job_bookmark_option": PAUSE, "job_bookmark_to": "r1"},
     "--job-bookmark-to was given without --job-bookmark-from"),
    ({"job_bookmark_option": ENABLE, "job_bookmark_from": "a", "job_bookmark_to": "b"},
     "only apply to --job-bookmark-option job-bookmark-pause"),
    ({"job_bookmark_option": ENABLE, "--job-bookmark-option": DISABLE}, "given twice"),
    (["--job-bookmark-option", ENABLE, "stray"], "unexpected argument 'stray'"),
    (42, "must be a dict or an argv list"),
])
def test_bad_arguments_get_one_clear_message(args, needle):
    with pytest.raises(ConfigError) as e:
        parse_job_args(args)
    assert needle in str(e.value)


def test_argv_to_dict_forms():
    assert argv_to_dict(["prog", "--a", "1", "--b=2", "--c"]) == {"a": "1", "b": "2", "c": "true"}
