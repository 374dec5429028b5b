"""A loopback OAuth 2.1 authorization server for toolhost's tests.

Issues RS256 JWT access tokens by the client credentials grant (client_secret_basic
or client_secret_post), with the audience the client names (`resource`, RFC 8707),
and publishes its metadata (RFC 8414) and signing keys (JWKS). For tests of
refusals, POST /mint signs any claims given, with its own key or (`"foreign": true`)
with a key it never published, under its key id or the `"kid"` given. For tests of key
fetching, GET /stats says how many times /jwks was fetched, and POST /control sets
`{"jwks_delay": SECONDS, "jwks_status": CODE}` for the fetches that follow.

Usage (run with the venv tests/mcp/setup.sh makes: PyJWT and cryptography come
with the `mcp` package):
    auth_server.py CLIENTS
CLIENTS is JSON: {"CLIENT_ID": {"secret": "...", "scopes": ["mcp", "tools:hash"]}}.
Prints "listening PORT" on stdout, then serves on 127.0.0.1 until stdin closes.
"""

import base64
import json
import os
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs

import jwt
from cryptography.hazmat.primitives.asymmetric import rsa

CLIENTS = json.loads(sys.argv[1])
KEY = rsa.generate_private_key(public_exponent=65537, key_size=2048)
FOREIGN = rsa.generate_private_key(public_exponent=65537, key_size=2048)
KID = "test-key-1"
STATS = {"jwks": 0}
CONTROL = {"jwks_delay": 0.0, "jwks_status": 200}
LOCK = threading.Lock()


def b64(number):
    raw = number.to_bytes((number.bit_length() + 7) // 8, "big")
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def jwks():
    numbers = KEY.public_key().public_numbers()
    return {"keys": [{"kty": "RSA", "kid": KID, "use": "sig", "alg": "RS256", "n": b64(numbers.n), "e": b64(numbers.e)}]}


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def issuer(self):
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def send(self, status, body):
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        if self.path == "/.well-known/oauth-authorization-server":
            self.send(200, {
                "issuer": self.issuer(),
                # Required of the metadata; this server grants client credentials only.
                "authorization_endpoint": self.issuer() + "/authorize",
                "token_endpoint": self.issuer() + "/token",
                "jwks_uri": self.issuer() + "/jwks",
                "grant_types_supported": ["client_credentials"],
                "token_endpoint_auth_methods_supported": ["client_secret_basic", "client_secret_post"],
                "response_types_supported": ["code"],
            })
        elif self.path == "/jwks":
            with LOCK:
                STATS["jwks"] += 1
                delay, status = CONTROL["jwks_delay"], CONTROL["jwks_status"]
            time.sleep(delay)
            self.send(status, jwks() if status == 200 else {"error": "unavailable"})
        elif self.path == "/stats":
            with LOCK:
                self.send(200, dict(STATS))
        else:
            self.send(404, {"error": "not_found"})

    def sign(self, claims, foreign=False, kid=KID):
        key = FOREIGN if foreign else KEY
        return jwt.encode(claims, key, algorithm="RS256", headers={"kid": kid})

    def do_POST(self):
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length).decode()
        if self.path == "/mint":
            asked = json.loads(raw)
            self.send(200, {"token": self.sign(asked["claims"], asked.get("foreign", False), asked.get("kid", KID))})
            return
        if self.path == "/control":
            with LOCK:
                CONTROL.update(json.loads(raw))
            self.send(200, dict(CONTROL))
            return
        if self.path != "/token":
            self.send(404, {"error": "not_found"})
            return
        form = {key: values[0] for key, values in parse_qs(raw).items()}
        client_id, secret = form.get("client_id"), form.get("client_secret")
        header = self.headers.get("authorization", "")
        if header.lower().startswith("basic "):
            client_id, _, secret = base64.b64decode(header[6:]).decode().partition(":")
        client = CLIENTS.get(client_id or "")
        if client is None or client["secret"] != secret:
            self.send(401, {"error": "invalid_client"})
            return
        if form.get("grant_type") != "client_credentials":
            self.send(400, {"error": "unsupported_grant_type"})
            return
        asked = (form.get("scope") or " ".join(client["scopes"])).split()
        scopes = [scope for scope in asked if scope in client["scopes"]]
        now = int(time.time())
        claims = {"iss": self.issuer(), "sub": client_id, "aud": form.get("resource", ""), "iat": now,
                  "exp": now + 600, "scope": " ".join(scopes)}
        self.send(200, {"access_token": self.sign(claims), "token_type": "Bearer", "expires_in": 600,
                        "scope": " ".join(scopes)})


def main():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    print(f"listening {server.server_address[1]}", flush=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    sys.stdin.read()
    os._exit(0)


if __name__ == "__main__":
    main()
