"""Token shapes the hand-written rules do not know are scrubbed by
detect-secrets' maintained detectors, in prose as well as in assignments;
a commit hash (high-entropy hex) stays."""

from __future__ import annotations

import pytest

from silas_exp.data.transcripts.pii import scrub

COMMIT = "4c1d2e7a9b3f5e6d8c0a1b2c3d4e5f60718293a4"
# built from parts so no committed file holds a whole token
TOKENS = {
    "stripe": "sk_" + "live_" + "a1B2c3D4e5F6g7H8i9J0k1L2",
    "twilio": "SK" + "0123456789abcdef0123456789abcdef",
    "sendgrid": "SG." + "abcdefghijklmnopqrstuv" + "." + "abcdefghijklmnopqrstuvwxyz0123456789ABCDEFG",
    "npm": "//registry.npmjs.org/:_authToken=" + "npm_" + "a" * 36,
    "telegram": "123456789:" + "AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsawq",
}


@pytest.mark.parametrize("kind", sorted(TOKENS))
def test_a_maintained_detector_scrubs_the_token_in_prose(kind):
    token = TOKENS[kind]
    text, counts = scrub(f"the deploy of commit {COMMIT} used {token} yesterday")
    secret = token.split("=")[-1]
    assert secret not in text and "<SECRET>" in text and counts["secret"] >= 1, text
    assert COMMIT in text  # high-entropy hex, but a commit hash: kept

