"""Credential detection and redaction for text about to become a note.

Every fake credential is assembled at run time (`"ghp_" + _random(36)`) so that this file holds
no literal token for a push-protection scanner to trip on.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from loremap.vault.secrets import SecretFinding, redact, scan

_ALPHABET = "Zq7Rk2Lm9Xp4Wd8Hs3Nf6Tb1Vc5Gy0JuEaOiPlKmNbQwErTyUuIoPaSdFgHjKlZxCvBnMq1w2e3r4t5y6"


def _random(length: int) -> str:
    """A fixed, random-looking run of letters and digits (deterministic across runs)."""
    return (_ALPHABET * (length // len(_ALPHABET) + 1))[:length]


def _upper(length: int) -> str:
    return _random(length).upper()


_PEM_BODY = _random(64) + "\n" + _random(64) + "\n" + _random(20) + "=="
_JWT = "eyJhbGciOiJIUzI1NiJ9" + ".eyJzdWIiOiIxMjM0NTY3ODkwIn0." + _random(43)
_SLACK_HOOK = "hooks.slack.com/services/T" + _upper(8) + "/B" + _upper(8) + "/" + _random(24)
_ASSIGNMENT = "password/secret/token assignment"


def _pem(label: str, body: str = _PEM_BODY, newline: str = "\n") -> str:
    return (
        f"-----BEGIN {label}-----{newline}"
        + body.replace("\n", newline)
        + f"{newline}-----END {label}-----"
    )


# case id: (kind, text before, the exact span that must be reported, text after)
_POSITIVES = {
    "aws-access-key-id": ("AWS access key id", "export AWS_KEY_ID=", "AKIA" + _upper(16), ""),
    "aws-session-key-id": ("AWS access key id", "id ", "ASIA" + _upper(16), " used"),
    "aws-secret-access-key": (
        "AWS secret access key", "aws_secret_access_key = ", _random(36) + "/+Ab", "\n"
    ),
    "google-api-key": ("Google API key", "key=", "AIza" + _random(35), "&q=1"),
    "github-classic-token": ("GitHub token", "use ", "ghp_" + _random(36), ""),
    "github-oauth-token": ("GitHub token", "", "gho_" + _random(36), ""),
    "github-app-token": ("GitHub token", "", "ghs_" + _random(36), "."),
    "github-fine-grained-token": (
        "GitHub token", "", "github_pat_" + _random(22) + "_" + _random(59), ""
    ),
    "gitlab-token": ("GitLab token", "", "glpat-" + _random(20), ""),
    "slack-bot-token": (
        "Slack token", "SLACK=", "xoxb-" + "2637412059-2364535789652-" + _random(24), ""
    ),
    "slack-user-token": (
        "Slack token", "", "xoxp-" + "41684372915-1320496754-45609968301-" + _random(32), ""
    ),
    "slack-webhook-url": ("Slack webhook URL", "post to https://", _SLACK_HOOK, " daily"),
    "stripe-live-key": ("Stripe secret key", "", "sk_live_" + _random(24), ""),
    "stripe-restricted-key": ("Stripe secret key", "", "rk_live_" + _random(24), ""),
    "stripe-test-key": ("Stripe secret key", "", "sk_test_" + _random(24), ""),
    "openai-project-key": ("OpenAI API key", "", "sk-proj-" + _random(64), ""),
    "openai-legacy-key": ("OpenAI API key", "", "sk-" + _random(48), ""),
    "anthropic-api-key": (
        "Anthropic API key", "ANTHROPIC_API_KEY=", "sk-ant-api03-" + _random(93) + "AA", ""
    ),
    "npm-token": ("npm token", "//registry/:_authToken=", "npm_" + _random(36), ""),
    "loremap-server-token": ("loremap server token", "the CI job sends ",
                             "lmk_" + _random(40) + "-_Q", " to the server"),
    "openssh-private-key": ("private key block", "", _pem("OPENSSH PRIVATE KEY"), "\n"),
    "rsa-private-key": ("private key block", "key:\n", _pem("RSA PRIVATE KEY"), "\n"),
    "ec-private-key": ("private key block", "", _pem("EC PRIVATE KEY"), ""),
    "dsa-private-key": ("private key block", "", _pem("DSA PRIVATE KEY"), ""),
    "encrypted-private-key": ("private key block", "", _pem("ENCRYPTED PRIVATE KEY"), ""),
    "pgp-private-key": (
        "private key block",
        "",
        _pem("PGP PRIVATE KEY BLOCK", "Version: 2\n\n" + _PEM_BODY + "\n=Ab1c"),
        "",
    ),
    "private-key-in-json": (
        "private key block",
        '{"private_key": "',
        _pem("PRIVATE KEY", _random(64), newline="\\n"),
        '\\n"}',
    ),
    "json-web-token": ("JSON Web Token", "Authorization: Bearer ", _JWT, ""),
    "url-with-password": (
        "URL with a password", "DATABASE_URL=postgresql://app:", "Tr0ub4dor", "@db:5432/app"
    ),
    "url-with-short-password": ("URL with a password", "postgresql://user:", "pw", "@host/db"),
    "url-with-empty-user": ("URL with a password", "redis://:", "s3cr3t9", "@cache:6379"),
    "password-assignment": (_ASSIGNMENT, 'password = "', "hunter2" * 2, '"'),
    "env-file-assignment": (_ASSIGNMENT, "DB_PASSWORD=", _random(16), "\nDEBUG=1"),
    "yaml-assignment": (_ASSIGNMENT, "client_secret: ", _random(20), "  # production"),
    "json-assignment": (_ASSIGNMENT, '{"api_key": "', _random(32), '"}'),
    "camel-case-assignment": (_ASSIGNMENT, "const authToken = '", _random(24), "';"),
    "typed-assignment": (_ASSIGNMENT, 'admin_password: str = "', "P@ss" + "w0rd!", '"'),
    "markdown-assignment": (_ASSIGNMENT, "**Password**: `", "hunter2" * 2, "`"),
}


@pytest.mark.parametrize("case", list(_POSITIVES), ids=list(_POSITIVES))
def test_a_credential_is_reported_with_its_kind_and_exact_span(case: str) -> None:
    kind, before, secret, after = _POSITIVES[case]
    text = before + secret + after
    findings = scan(text)
    assert [(f.kind, text[f.start : f.end]) for f in findings] == [(kind, secret)]


_NEGATIVES = {
    "token-in-prose": "The token expires after 15 minutes, so the client refreshes it.",
    "secret-in-prose": "Rotate the secret monthly and never log the password.",
    "colon-in-prose": "The secret: rotate it monthly. Password: required for every account.",
    "token-from-call": "token = get_token()",
    "password-from-environ": 'password = os.environ["DB_PASSWORD"]',
    "password-from-getenv": "password = os.getenv('DB_PASSWORD2')",
    "key-from-settings": "api_key = settings.API_KEY_V2",
    "env-reference": "api_key: ${API_KEY}",
    "shell-reference": "export TOKEN=$GITHUB_TOKEN",
    "angle-placeholder": "secret: <your-secret>",
    "template-placeholder": 'token: "{{ secrets.DEPLOY_TOKEN }}"',
    "changeme-placeholder": "password = 'changeme'",
    "git-sha-in-prose": "Fixed in a1b2c3d4e5f6a7b8c9d0a1b2c3d4e5f6a7b8c9d0 yesterday.",
    "short-commit": "commit: a1b2c3d",
    "sha256-in-prose": "The digest is sha256:" + "9f2c4e1a7b3d5f60" * 4 + ".",
    "uuid": "request 123e4567-e89b-12d3-a456-426614174000 failed",
    "blob-hashes": "file_hashes: {src/a.ts: " + "9f2c4e1a" * 5 + ", t.ts: " + "1a2b3c4d" * 5 + "}",
    "css-colors": "color: #ff00aa; background: #123456;",
    "sk-inside-words": "See the task-list, the desk-lamp and risk-assessment-2024-q3-final.",
    "akia-in-sentence": "AWS access key ids start with AKIA and are 20 characters long.",
    "aws-documentation-key": "aws_access_key_id = AKIA" + "IOSFODNN7" + "EXAMPLE",
    "url-with-user-only": "git clone https://user@github.com/x",
    "url-with-port": "curl http://localhost:8080/health",
    "url-with-placeholder-password": "postgresql://user:${DB_PASSWORD}@host/db",
    "url-with-env-password": "postgresql://user:$PASSWORD@host/db",
    "url-with-stars": "amqp://guest:***@rabbit:5672",
    "url-with-word-password": "mysql://root:password@db/app",
    "url-with-default-credentials": "postgres://postgres:postgres@localhost:5432/db",
    "url-on-documentation-host": "http://evil:thing@example.com/login",
    "camel-case-identifier": "refreshTokenExpiry = 3600000",
    "name-not-ending-in-keyword": "password_hash = 'abc123def456ghi'",
    "bypass-is-not-pass": "bypass = 'abc123xyz987'",
    "max-tokens": "max_tokens: 4096",
    "type-annotation": "def load(private_key: PKCS7PrivateKeyTypes, password: bytes) -> None:",
    "type-path": '"AWS::IAM::AccessKey": "72c2d9dd90025459",',
    "slug-value": "secret: db-credentials-v2",
    "path-value": "PWD=/home/dev/project2",
    "placeholder-github-token": "ghp_" + "x" * 36,
    "header-without-body": 'START = b"-----BEGIN OPENSSH PRIVATE KEY-----"',
    "low-entropy-value": "password = 'aaaa1111'",
}


@pytest.mark.parametrize("case", list(_NEGATIVES), ids=list(_NEGATIVES))
def test_prose_code_and_placeholders_about_secrets_are_not_flagged(case: str) -> None:
    assert scan(_NEGATIVES[case]) == []


def test_the_line_number_is_one_based_within_the_text() -> None:
    text = "# Deploy notes\n\nThe CI uses ghp_" + _random(36) + " for releases.\n"
    (finding,) = scan(text)
    assert finding.line == 3
    assert text[finding.start : finding.end] == "ghp_" + _random(36)


def test_findings_are_sorted_by_start_with_their_own_lines() -> None:
    text = "sk_live_" + _random(24) + "\nprose\nnpm_" + _random(36) + "\n"
    assert [(f.kind, f.line) for f in scan(text)] == [("Stripe secret key", 1), ("npm token", 3)]


def test_redaction_keeps_the_name_and_hides_only_the_value() -> None:
    text = 'db:\n  password: "' + "hunter2" * 2 + '"\n  host: db.internal\n'
    assert redact(text, scan(text)) == (
        'db:\n  password: "[REDACTED password/secret/token assignment]"\n  host: db.internal\n'
    )


def test_redaction_keeps_the_url_readable() -> None:
    text = "postgresql://app:" + "Tr0ub4dor" + "@db.internal:5432/app"
    assert redact(text, scan(text)) == (
        "postgresql://app:[REDACTED URL with a password]@db.internal:5432/app"
    )


def test_redaction_replaces_a_whole_private_key_block() -> None:
    text = "Key:\n" + _pem("RSA PRIVATE KEY") + "\nDone."
    assert redact(text, scan(text)) == "Key:\n[REDACTED private key block]\nDone."


def test_a_truncated_private_key_still_hides_its_body() -> None:
    header = "-----BEGIN RSA PRIVATE KEY-----\nProc-Type: 4,ENCRYPTED\n\n"
    text = header + _PEM_BODY + "\nthen prose"
    assert redact(text, scan(text)) == "[REDACTED private key block]\nthen prose"


def test_redaction_accepts_findings_in_any_order() -> None:
    text = "a ghp_" + _random(36) + " b npm_" + _random(36) + " c"
    findings = scan(text)
    assert redact(text, list(reversed(findings))) == (
        "a [REDACTED GitHub token] b [REDACTED npm token] c"
    )


def test_a_provider_token_assigned_to_a_secret_name_is_reported_once_by_its_provider() -> None:
    text = 'token: "ghp_' + _random(36) + '"'
    assert [f.kind for f in scan(text)] == ["GitHub token"]


def test_a_token_inside_a_url_password_is_reported_once_by_its_provider() -> None:
    text = "https://x-access:ghp_" + _random(36) + "@github.com/org/repo.git"
    assert [f.kind for f in scan(text)] == ["GitHub token"]


def test_when_matches_overlap_the_earlier_longer_one_wins() -> None:
    value = _random(10) + "-ghp_" + _random(36)
    text = 'secret = "' + value + '"'
    (finding,) = scan(text)
    assert (finding.kind, text[finding.start : finding.end]) == (
        "password/secret/token assignment",
        value,
    )


def test_redaction_skips_a_finding_that_overlaps_an_earlier_one() -> None:
    text = "0123456789"
    findings = [SecretFinding("a", 1, 2, 6), SecretFinding("b", 1, 4, 8)]
    assert redact(text, findings) == "01[REDACTED a]6789"


def test_text_without_secrets_is_returned_unchanged_by_redaction() -> None:
    text = "Nothing to hide here.\n"
    assert redact(text, scan(text)) == text


_FRAGMENTS = [
    "password = ", "token: ", '"', "'", "`", "\n", " ", "=", ":", "://", "@", "user:", "ghp_",
    "AKIA", "sk-", "sk-ant-api03-", "eyJ", ".", "-----BEGIN RSA PRIVATE KEY-----",
    "-----END RSA PRIVATE KEY-----", "\\n", "xoxb-", "glpat-", "npm_", "AIza", "hooks.slack.com/",
    "services/", "aws_secret_access_key=", "api_key", "PASS", "İ", _random(8), _random(40),
    "1234567890123-", "hunter2", "${X}", "[REDACTED x]",
]  # fmt: skip

_texts = st.text() | st.lists(
    st.sampled_from(_FRAGMENTS) | st.text(max_size=5), max_size=30
).map("".join)


@settings(derandomize=True, max_examples=300)
@given(_texts)
def test_scanning_never_raises_and_redacted_text_scans_clean(text: str) -> None:
    findings = scan(text)
    assert all(0 <= f.start < f.end <= len(text) for f in findings)
    assert all(a.end <= b.start for a, b in zip(findings, findings[1:], strict=False))
    assert scan(redact(text, findings)) == []


# --- issue 17: the nine kinds once missed, gitleaks' rules, more non-secrets ---------------

def _hex(length: int) -> str:
    return ("9f2c4e1a7b3d5f60a8c1e7d2b4f6039e" * (length // 32 + 1))[:length]


def _b64(raw: bytes) -> str:
    import base64

    return base64.b64encode(raw).decode("ascii")


# case id: (kind, text before, the exact span that must be reported, text after)
_ONCE_MISSED = {
    "azure-account-key": ("Azure storage key", "DefaultEndpointsProtocol=https;AccountName=shop;"
                          "AccountKey=", _random(86) + "==", ";EndpointSuffix=core.windows.net"),
    "sendgrid": ("sendgrid-api-token", "SENDGRID_API_KEY=",
                 "SG." + _random(22) + "." + _random(43), ""),
    "google-oauth-secret": ("Google OAuth client secret", '"client_secret": "',
                            "GOCSPX-" + _random(28), '"'),
    "vault-token": ("Vault token", "export VAULT_TOKEN=", "hvs." + _random(90), ""),
    "digitalocean-pat": ("digitalocean-pat", "DO_TOKEN ", "dop_v1_" + _hex(64), ""),
    "pypi-token": ("pypi-upload-token", "twine upload -p ",
                   "pypi-AgEIcHlwaS5vcmc" + _random(70), " dist/*"),
    "authorization-basic": ("HTTP Basic credentials", "Authorization: Basic ",
                            _b64(b"deploy:Tr0ub4dor-77"), "\n"),
    "bearer-in-curl": ("bearer token", 'curl https://api.shop.test/v1 -H "Bearer ',
                       _random(32), '"'),
    "passphrase-after-password": (_ASSIGNMENT, 'password: "', "correct horse battery staple",
                                  '"'),
    "slug-passphrase": (_ASSIGNMENT, "password: ", "correct-horse-battery-staple", ""),
    "one-line-private-key": (
        "private key block", "title ",
        "-----BEGIN RSA PRIVATE KEY----- " + _random(64) + " " + _random(20)
        + "== -----END RSA PRIVATE KEY-----", " end"),
}


@pytest.mark.parametrize("case", list(_ONCE_MISSED), ids=list(_ONCE_MISSED))
def test_the_kinds_once_missed_are_reported_with_their_exact_span(case: str) -> None:
    kind, before, secret, after = _ONCE_MISSED[case]
    text = before + secret + after
    assert [(f.kind, text[f.start : f.end]) for f in scan(text)] == [(kind, secret)]


# gitleaks rule id -> (text before, secret, text after): one true sample per provider kind
_GITLEAKS_SAMPLES = {
    "1password-secret-key": ("", "A3-" + "-".join(_upper(40)[i : i + n] for i, n in
                                                  ((0, 6), (6, 11), (17, 5), (22, 5), (27, 5))),
                             ""),
    "age-secret-key": ("", "AGE-SECRET-KEY-1" + ("QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L" * 2)[:58],
                       ""),
    "jfrog-api-key": ("artifactory_key = ", _hex(73), ""),
    "clojars-api-token": ("", "CLOJARS_" + _random(60).lower(), ""),
    "databricks-api-token": ("", "dapi" + _hex(32), " "),
    "doppler-api-token": ("", "dp.pt." + _random(43), ""),
    "dynatrace-api-token": ("", "dt0c01." + _upper(24) + "." + _upper(64), ""),
    "gitlab-rrt": ("", "GR1348941" + _random(20), ""),
    "grafana-service-account-token": ("", "glsa_" + _random(32) + "_" + _hex(8), " "),
    "heroku-api-key-v2": ("", "HRKU-AA" + _random(58), " "),
    "huggingface-access-token": ("", "hf_" + "".join(c for c in _ALPHABET if c.isalpha())[:34],
                                 " "),
    "linear-api-key": ("", "lin_api_" + _random(40), ""),
    "mailgun-private-api-token": ("mailgun_key = ", "key-" + _hex(32), ""),
    "notion-api-token": ("", "ntn_" + "12345678901" + _random(35), " "),
    "planetscale-password": ("", "pscale_pw_" + _random(40), " "),
    "postman-api-token": ("", "PMAK-" + _hex(24) + "-" + _hex(34), " "),
    "prefect-api-token": ("", "pnu_" + _random(36), " "),
    "pulumi-api-token": ("", "pul-" + _hex(40), " "),
    "rubygems-api-token": ("", "rubygems_" + _hex(48), " "),
    "sendinblue-api-token": ("", "xkeysib-" + _hex(64) + "-" + _random(16), " "),
    "sentry-user-token": ("", "sntryu_" + _hex(64), " "),
    "shopify-access-token": ("", "shpat_" + _hex(32), ""),
    "twilio-api-key": ("", "SK" + _hex(32), ""),
    "telegram-bot-api-token": ("TELEGRAM_BOT=", "1234567890:A" + _random(34), ""),
}


@pytest.mark.parametrize("rule", list(_GITLEAKS_SAMPLES), ids=list(_GITLEAKS_SAMPLES))
def test_each_gitleaks_rule_catches_its_own_kind_of_sample(rule: str) -> None:
    before, secret, after = _GITLEAKS_SAMPLES[rule]
    text = before + secret + after
    assert [(f.kind, text[f.start : f.end]) for f in scan(text)] == [(rule, secret)]


def test_the_vendored_rule_file_is_gitleaks_own_and_every_rule_compiles() -> None:
    import hashlib
    import warnings
    from pathlib import Path

    from loremap.vault import gitleaks

    path = Path(gitleaks.__file__).parent / "rules" / "gitleaks.toml"
    # the file rules/README.md names, unchanged
    assert hashlib.sha256(path.read_bytes()).hexdigest() == (
        "cfe0bea207fb43fb2f3c83fee373d2e67ff95da7c98181476c2cdb99a3a2868e")
    rules = gitleaks.rule_set().rules
    assert len(rules) == 208  # 213, less the five bound to a file name
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a FutureWarning (nested set) would be a bad conversion
        for rule in rules:
            gitleaks.compiled(rule.source)
            for allow in rule.allowlists:
                for source in allow.regexes:
                    gitleaks.compiled(source)
    assert {r.id for r in rules} >= set(_GITLEAKS_SAMPLES) | {"generic-api-key", "private-key"}


@pytest.mark.parametrize(("go", "python"), [
    (r"\b(p8e-(?i)[a-z0-9]{32})", r"\b(p8e-(?i:[a-z0-9]{32}))"),
    (r"(?:a(?i)b|c)", r"(?:a(?i:b)|(?i:c))"),  # RE2 keeps the flag across `|`
    (r"^/Users/(?i)[a-z]+/[\w .-/]+$", r"^/Users/(?i:[a-z]+/[\w .-/]+$)"),
    (r"x(?:\s|\z)", r"x(?:\s|\Z)"),
    (r"(?i)[(?i)]", r"(?i)[(?i)]"),  # a class is copied as it is
])
def test_re2_syntax_is_converted_where_python_differs(go: str, python: str) -> None:
    from loremap.vault.gitleaks import _to_python

    assert _to_python(go) == python


_MORE_NEGATIVES = {
    "sha256-hex": "sha256: 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
    "md5-checksum": "checksum = 0cc175b9c0f1b6a831c399e269772661",
    "git-sha-near-api-key": "commit 86f7e437faa5a7fce15d1ddcb9eaeaea377667b8 rotated the api key",
    "uuid-id": "id: 0f8fad5b-d9cb-469f-a165-70867728950e",
    "base64-of-text": "sourcemap key: " + _b64(b"hello world this is text"),
    "base64-body-prose": "The body is base64: " + _b64(b"The quick brown fox jumps over it"),
    "token-url": "token_url = https://auth.shop.internal/oauth/token",
    "api-version": "api_version: 2024-06-01",
    "long-identifier": "auth: AbstractAuthenticationProcessingFilterChainProxy2",
    "long-snake-identifier": "key: build_docker_image_for_linux_arm64_v2",
    "password-hash-name": "password_hash = 'abc123def456ghi'",
    "basic-in-prose": "Use Basic authentication over TLS only.",
    "bearer-in-prose": "Bearer tokens expire after an hour; refresh with the refresh_token grant.",
    "bearer-reference": "Authorization: Bearer $TOKEN",
    "bearer-placeholder": "Authorization: Bearer <token>",
    "basic-placeholder": "Authorization: Basic " + _b64(b"user:password"),
    "secret-path": "secret_name: prod/db/password-2024",
    "quoted-sentence": 'password: "see the vault entry for it"',
    "token-counts": "token_count=1024 tokens_total=88231",
    "cache-key-template": "cache_key = f'user:{user_id}:profile:v3'",
    "settings-reference": "jwt_secret_env = JWT_SECRET_V2",
    "header-in-prose": "grep for -----BEGIN RSA PRIVATE KEY----- headers in the logs",
}


@pytest.mark.parametrize("case", list(_MORE_NEGATIVES), ids=list(_MORE_NEGATIVES))
def test_hashes_ids_encoded_text_and_identifiers_are_not_flagged(case: str) -> None:
    assert scan(_MORE_NEGATIVES[case]) == []


_KEYWORD_PIECES = ("api", "api-", "key", "akia", "-----begin", "secret", "token", "ghp_", "x", " ",
                   "_", "=", "ap", "aiza", "glpat-", "sk-", "\n", "é")


@settings(max_examples=200)
@given(st.lists(st.sampled_from(_KEYWORD_PIECES), max_size=40))
def test_a_short_text_finds_the_keywords_the_trie_finds(pieces):
    """The gitleaks prefilter searches a short text keyword by keyword and a long one with its
    trie-shaped pattern: both find every keyword that occurs (the long text here is the short
    one padded with spaces, which hold none)."""
    from loremap.vault import gitleaks

    rules = gitleaks.rule_set()
    text = "".join(pieces).lower()
    assert len(text) < gitleaks._SHORT
    by_search = rules.present(text)
    assert by_search == {k for k in rules.by_keyword if k in text}
    assert rules.present(text + " " * gitleaks._SHORT) == by_search


def test_the_rules_are_read_from_their_json_copy_only_when_it_is_of_this_toml(tmp_path):
    """The shipped JSON copy is the TOML's rules (so the hooks skip tomllib); a copy written
    from another TOML, or a broken one, is passed over for the TOML itself."""
    import json
    import shutil
    import tomllib
    from pathlib import Path

    from loremap.vault import gitleaks

    rules = Path(gitleaks.__file__).parent / "rules"
    parsed = tomllib.loads((rules / "gitleaks.toml").read_text(encoding="utf-8"))
    copy = json.loads((rules / "gitleaks.json").read_text(encoding="utf-8"))
    assert copy["rules"] == parsed  # regenerate with write_rules_json() after an update
    assert gitleaks.rules_data(rules) == parsed
    shutil.copy(rules / "gitleaks.toml", tmp_path / "gitleaks.toml")
    for stale in ({"sha256": "0" * 64, "rules": {"rules": []}}, ["not", "a", "map"]):
        (tmp_path / "gitleaks.json").write_text(json.dumps(stale), encoding="utf-8")
        assert gitleaks.rules_data(tmp_path) == parsed
    (tmp_path / "gitleaks.json").write_text("{broken", encoding="utf-8")
    assert gitleaks.rules_data(tmp_path) == parsed
    assert gitleaks.write_rules_json(tmp_path) == tmp_path / "gitleaks.json"
    assert json.loads((tmp_path / "gitleaks.json").read_text(encoding="utf-8")) == copy
