"""Pure: the S3 settings a Spark Connect client derives from the server's s3a configuration."""
from __future__ import annotations

from sparkmark.engine.fs import arrow_s3_options


def test_endpoint_path_style_and_keys_from_s3a_settings():
    conf = {"fs.s3a.endpoint": "http://127.0.0.1:9000", "fs.s3a.path.style.access": "true",
            "fs.s3a.access.key": "k", "fs.s3a.secret.key": "s",
            "fs.s3a.endpoint.region": "eu-west-1"}
    assert arrow_s3_options(conf, "lake") == {
        "endpoint_override": "127.0.0.1:9000", "scheme": "http",
        "force_virtual_addressing": False, "access_key": "k", "secret_key": "s",
        "region": "eu-west-1"}


def test_bucket_settings_win_and_a_session_token_is_passed():
    conf = {"fs.s3a.endpoint": "https://s3.example.com", "fs.s3a.access.key": "k",
            "fs.s3a.secret.key": "s", "fs.s3a.bucket.other.endpoint": "minio:9000",
            "fs.s3a.bucket.other.connection.ssl.enabled": "false",
            "fs.s3a.bucket.other.session.token": "t"}
    lake = arrow_s3_options(conf, "lake")
    assert lake is not None and lake["endpoint_override"] == "s3.example.com"
    assert lake["scheme"] == "https" and lake["force_virtual_addressing"] is True
    assert "session_token" not in lake
    other = arrow_s3_options(conf, "other")
    assert other is not None
    assert (other["endpoint_override"], other["scheme"], other["session_token"]) == \
        ("minio:9000", "http", "t")


def test_nothing_configured_leaves_pyarrow_to_its_own_chain():
    assert arrow_s3_options({}, "lake") is None
    assert arrow_s3_options({"fs.s3a.path.style.access": "true"}, "lake") is None
    # an endpoint without keys (the Connect server never sends its secrets): the client's
    # AWS_* variables supply the keys
    got = arrow_s3_options({"fs.s3a.endpoint": "http://h:1"}, "lake")
    assert got is not None and "access_key" not in got and got["endpoint_override"] == "h:1"
