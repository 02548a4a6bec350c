from __future__ import annotations

import logging
from pathlib import Path

import pytest

from retrieval.db.config import DatabaseConfig, default_data_dir
from retrieval.db.embedded_sizing import auto_shared_buffers, memory_size_kb, physical_memory
from retrieval.db.engine import sqlalchemy_url
from retrieval.errors import ConfigurationError, mask_url, unavailable_error
from retrieval.memory.config import WriteConfig
from retrieval.search.config import RetrievalConfig
from retrieval.settings import known_variables

GIB = 1024**3


def test_defaults_use_the_embedded_server_in_a_per_user_directory() -> None:
    config = DatabaseConfig.from_env({})
    assert config.url is None
    assert config.data_dir == default_data_dir()
    assert config.schema == "retrieval"
    assert config.embedding_dim == 384


def test_from_env_reads_every_variable(tmp_path: Path) -> None:
    config = DatabaseConfig.from_env(
        {
            "RETRIEVAL_DATABASE_URL": "postgresql://u:p@db:5432/x",
            "RETRIEVAL_DATA_DIR": str(tmp_path),
            "RETRIEVAL_SCHEMA": "agent_memory",
            "RETRIEVAL_EMBEDDING_DIM": "768",
            "RETRIEVAL_EMBEDDED_SHARED_BUFFERS": "512MB",
        }
    )
    assert config == DatabaseConfig(
        url="postgresql://u:p@db:5432/x",
        data_dir=tmp_path,
        schema="agent_memory",
        embedding_dim=768,
        shared_buffers="512MB",
    )


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"schema": "Robert'); DROP TABLE x;--"}, "not a plain PostgreSQL identifier"),
        ({"schema": "1abc"}, "not a plain PostgreSQL identifier"),
        ({"embedding_dim": 0}, "embedding_dim=0 is out of range"),
        ({"embedding_dim": 4096}, "embedding_dim=4096 is out of range"),
        ({"embedding_dim": True}, "must be an integer"),
        ({"url": "  "}, "database url is empty"),
        ({"shared_buffers": "2 GB"}, "shared_buffers='2 GB' is not a PostgreSQL memory size"),
        ({"shared_buffers": "lots"}, "such as 512MB or 2GB"),
        ({"shared_buffers": "64kB"}, "at least 128kB"),
    ],
)
def test_bad_values_are_refused_when_the_config_is_made(
    kwargs: dict[str, object], message: str
) -> None:
    with pytest.raises(ConfigurationError, match=message):
        DatabaseConfig(**kwargs)  # type: ignore[arg-type]


def test_a_non_integer_dimension_in_the_environment_names_the_variable() -> None:
    with pytest.raises(ConfigurationError, match="RETRIEVAL_EMBEDDING_DIM='large'"):
        DatabaseConfig.from_env({"RETRIEVAL_EMBEDDING_DIM": "large"})


def test_a_bad_shared_buffers_in_the_environment_names_the_variable() -> None:
    with pytest.raises(ConfigurationError, match="RETRIEVAL_EMBEDDED_SHARED_BUFFERS='2gb'"):
        DatabaseConfig.from_env({"RETRIEVAL_EMBEDDED_SHARED_BUFFERS": "2gb"})


@pytest.mark.parametrize(
    ("memory_bytes", "expected"),
    [
        (24 * GIB, "2048MB"),  # a quarter would be 6 GB: capped
        (4 * GIB, "1024MB"),
        (1 * GIB, "256MB"),
        (256 * 1024**2, "128MB"),  # never below PostgreSQL's default
        (None, "128MB"),  # memory unknown
    ],
)
def test_the_embedded_server_gets_a_quarter_of_the_memory_within_bounds(
    memory_bytes: int | None, expected: str
) -> None:
    assert auto_shared_buffers(memory_bytes) == expected
    assert memory_size_kb(expected) == int(expected[:-2]) * 1024


def test_a_containers_memory_limit_bounds_the_memory_counted(tmp_path: Path) -> None:
    # cgroup v2 at the root (what a container sees), v1 under this process's own group.
    (tmp_path / "memory.max").write_text(f"{GIB}\n")
    own = tmp_path / "memory" / "job"
    own.mkdir(parents=True)
    (own / "memory.limit_in_bytes").write_text(f"{3 * GIB}\n")
    groups = tmp_path / "cgroup"
    groups.write_text("4:memory:/job\n0::/\n")
    assert physical_memory(tmp_path, groups) == GIB
    assert auto_shared_buffers(physical_memory(tmp_path, groups)) == "256MB"


def test_no_memory_limit_leaves_the_machines_memory(tmp_path: Path) -> None:
    (tmp_path / "memory.max").write_text("max\n")
    (tmp_path / "memory").mkdir()
    (tmp_path / "memory" / "memory.limit_in_bytes").write_text("9223372036854771712\n")
    machine = physical_memory(tmp_path / "absent", tmp_path / "absent")
    assert machine is not None and machine > 0
    assert physical_memory(tmp_path, tmp_path / "no-such-file") == machine


def test_config_is_frozen() -> None:
    config = DatabaseConfig()
    with pytest.raises(AttributeError):
        config.schema = "other"  # type: ignore[misc]


@pytest.mark.parametrize(
    "url",
    [
        "postgres://u:p@h:5432/d",
        "postgresql://u:p@h:5432/d",
        "postgresql+psycopg2://u:p@h:5432/d",
        "postgresql+psycopg://u:p@h:5432/d",
    ],
)
def test_postgresql_urls_are_normalized_to_psycopg3(url: str) -> None:
    assert sqlalchemy_url(url) == "postgresql+psycopg://u:p@h:5432/d"


def test_other_databases_are_refused_with_the_password_masked() -> None:
    with pytest.raises(ConfigurationError, match=r"mysql://u:\*\*\*@h/d is not a PostgreSQL URL"):
        sqlalchemy_url("mysql://u:secret@h/d")


def test_garbage_is_not_a_url() -> None:
    with pytest.raises(ConfigurationError, match="is not a database URL"):
        sqlalchemy_url("not a url")


def test_mask_url_hides_the_password() -> None:
    assert mask_url("postgresql://alice:s3cret@db/x") == "postgresql://alice:***@db/x"


@pytest.mark.parametrize(
    "url",
    [
        "postgresql://alice@/db?host=/x&password=s3cret",
        "postgresql://alice@db/x?sslmode=require&sslpassword=s3cret",
        "postgresql://alice:p@s3cret@db/x",  # an unencoded @ in the password
        "postgres:/alice:s3cret@db/x",  # a typo in the scheme
        "postgresql+psycopg://alice:s3cret@db:5432/x?application_name=a",
        "host=db user=alice password=s3cret dbname=x",
        "host=db password='s3 cret' dbname=x",
    ],
)
def test_every_form_of_password_is_masked(url: str) -> None:
    masked = mask_url(url)
    assert "s3cret" not in masked and "cret" not in masked and "***" in masked
    if "://" in url or ":/" in url:
        try:
            config = DatabaseConfig(url=url)
        except ConfigurationError as refused:  # an unencoded @: refused, the password unsaid
            assert "s3cret" not in str(refused) and "@" in url.split("s3cret")[0]
            return
        assert "s3cret" not in repr(config)
        with pytest.raises(ConfigurationError) as raised:
            sqlalchemy_url("postgres:/alice:s3cret@db/x")
        assert "s3cret" not in str(raised.value)


def test_write_config_from_env() -> None:
    from retrieval.memory.config import WriteConfig

    assert WriteConfig.from_env({}) == WriteConfig()
    config = WriteConfig.from_env(
        {
            "RETRIEVAL_EMBEDDING_MODEL": "/models/e5-small",
            "RETRIEVAL_MAX_TEXT_CHARS": "1000",
            "RETRIEVAL_EMBEDDING_CACHE_SIZE": "0",
            "RETRIEVAL_EMBEDDING_BATCH_SIZE": "16",
        }
    )
    assert config == WriteConfig("/models/e5-small", 1000, 0, 16)
    with pytest.raises(ConfigurationError, match="RETRIEVAL_MAX_TEXT_CHARS='many'"):
        WriteConfig.from_env({"RETRIEVAL_MAX_TEXT_CHARS": "many"})
    with pytest.raises(ConfigurationError, match="batch_size must be an integer >= 1, got 0"):
        WriteConfig(batch_size=0)
    # The memories' lexemes are made in the configuration of the migration: a database setting.
    database = DatabaseConfig.from_env({"RETRIEVAL_TEXT_SEARCH_CONFIG": "simple"})
    assert database.text_search_config == "simple"
    with pytest.raises(ConfigurationError, match="text_search_config 'english; drop'"):
        DatabaseConfig(text_search_config="english; drop")


def test_importing_the_library_does_not_import_torch(tmp_path: Path) -> None:
    import subprocess
    import sys

    # From outside the repository, as an installed user imports it: the regular package (its
    # __init__ runs, so the public API is there), and no PyTorch until something is embedded.
    code = (
        "import sys, retrieval, retrieval.cli.commands; "
        "print(retrieval.MemoryStore.__name__, 'torch' in sys.modules)"
    )
    ran = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=tmp_path
    )
    assert ran.stdout.strip() == "MemoryStore False"


def test_an_unknown_retrieval_variable_is_warned_about_once_with_the_closest_name(
    caplog: pytest.LogCaptureFixture,
) -> None:
    environ = {"RETRIEVAL_MIN_FINAL_SCOR": "0.9", "RETRIEVAL_SCHEMA": "s", "HOME": "/root"}
    with caplog.at_level(logging.WARNING, logger="retrieval.settings"):
        RetrievalConfig.from_env(environ)
        DatabaseConfig.from_env(environ)
        WriteConfig.from_env(environ)
    assert [record.getMessage() for record in caplog.records] == [
        "RETRIEVAL_MIN_FINAL_SCOR is set but retrieval reads no such variable; "
        "did you mean RETRIEVAL_MIN_FINAL_SCORE?"
    ]


def test_every_variable_the_package_reads_is_known(caplog: pytest.LogCaptureFixture) -> None:
    environ = {
        "RETRIEVAL_EPISODIC_LIMIT": "3",
        "RETRIEVAL_WORKING_STATE_HALF_LIFE_HOURS": "2",
        "RETRIEVAL_DOCUMENTS_ENABLED": "false",
        "RETRIEVAL_DATA_DIR": "/tmp/x",
        "RETRIEVAL_EMBEDDING_MODEL": "m",
        "RETRIEVAL_TEST_DATABASE_URL": "postgresql://localhost/t",
    }
    with caplog.at_level(logging.WARNING, logger="retrieval.settings"):
        RetrievalConfig.from_env(environ)
        DatabaseConfig.from_env(environ)
        WriteConfig.from_env(environ)
    assert caplog.records == []
    assert {
        "RETRIEVAL_SEMANTIC_RELEVANCE",
        "RETRIEVAL_DOCUMENTS_LIMIT",
        "RETRIEVAL_MIN_FINAL_SCORE",
        "RETRIEVAL_DATABASE_URL",
    } <= known_variables()


def test_a_data_dir_given_as_text_is_a_path() -> None:
    assert DatabaseConfig(data_dir="/tmp/somewhere").data_dir == Path("/tmp/somewhere")  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="data_dir must be a path"):
        DatabaseConfig(data_dir=3)  # type: ignore[arg-type]


def test_an_unreachable_embedded_server_is_not_told_to_unset_a_url(tmp_path: Path) -> None:
    (tmp_path / "PG_VERSION").write_text("18\n")
    embedded = unavailable_error(
        f"postgresql+psycopg://postgres@/retrieval?host={tmp_path}", OSError("no socket")
    )
    assert f"embedded PostgreSQL in {tmp_path}" in str(embedded)
    assert str(tmp_path / "log") in str(embedded) and "RETRIEVAL_DATABASE_URL" not in str(embedded)
    remote = unavailable_error("postgresql://app:secret@db.internal/app", OSError("refused"))
    assert "db.internal" in str(remote) and "secret" not in str(remote)
    assert "unset it to use the embedded server" in str(remote)
