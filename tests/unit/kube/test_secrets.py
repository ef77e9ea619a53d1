"""Reading a Secret's data: base64 decoded, values that are not base64 left out."""

from __future__ import annotations

import base64

from extender.kube.secrets import secret_data


def test_secret_data_is_decoded_and_what_is_not_base64_is_left_out() -> None:
    secret = {
        "data": {
            "tls.crt": base64.b64encode(b"certificate").decode(),
            "broken": "not base64!",
            "number": 7,
        }
    }
    assert secret_data(secret) == {"tls.crt": b"certificate"}
    assert secret_data({}) == {}
    assert secret_data({"data": None}) == {}
