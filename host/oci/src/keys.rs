//! Key files for signatures, in the forms cosign reads and writes: ECDSA
//! P-256 keys (what `cosign generate-key-pair` makes).
//!
//! - A public key is a PEM `PUBLIC KEY` (a DER SubjectPublicKeyInfo), as in
//!   `cosign.pub`. Its fingerprint is `sha256:` and the SHA-256 of that DER,
//!   the same for every copy of the key whatever the file is called.
//! - A private key is cosign's own `ENCRYPTED SIGSTORE PRIVATE KEY` (or the
//!   older `ENCRYPTED COSIGN PRIVATE KEY`): base64 of JSON naming the key
//!   derivation (scrypt, with its `N`, `r`, `p` and salt) and the cipher
//!   (NaCl secretbox, with its nonce), and the ciphertext of a PKCS#8 DER key;
//!   the password is what cosign takes, [`PASSWORD_ENV`]. Or a plain PEM
//!   `PRIVATE KEY` (PKCS#8) or `EC PRIVATE KEY` (SEC1), as openssl writes them.
//!
//! The cryptography is not ours: ECDSA is ring's, scrypt and secretbox are
//! RustCrypto's, PEM is the `pem` crate's and DER is `yasna`'s. Everything a
//! key file holds is bounded and checked (the scrypt cost too, so a hostile
//! file cannot ask for gigabytes); nothing here prints a private key or a
//! password.

use ring::signature::{self, EcdsaKeyPair, KeyPair};
use std::fmt;
use std::path::Path;
use toolhost_grants::env::Secret;
use yasna::models::ObjectIdentifier;

/// The environment variable holding an encrypted private key's password, as for cosign.
pub const PASSWORD_ENV: &str = "COSIGN_PASSWORD";

/// The largest key file read.
pub const MAX_KEY_FILE: u64 = 64 << 10;

/// The most memory an encrypted key's scrypt may ask for (`128 · N · r` bytes):
/// cosign's own keys take 64 MiB.
const MAX_SCRYPT_MEMORY: u64 = 256 << 20;

/// id-ecPublicKey (RFC 5480).
const EC_PUBLIC_KEY: &[u64] = &[1, 2, 840, 10045, 2, 1];
/// prime256v1, also called secp256r1 and P-256 (RFC 5480).
const P256: &[u64] = &[1, 2, 840, 10045, 3, 1, 7];

const KIND: &str = "toolhost takes ECDSA P-256 keys, what `cosign generate-key-pair` makes";

/// A trusted public key, from a PEM `PUBLIC KEY` file.
#[derive(Clone)]
pub struct PublicKey {
    /// Where it came from, for messages and the lock file.
    pub name: String,
    /// The DER SubjectPublicKeyInfo.
    spki: Vec<u8>,
    /// The uncompressed point.
    point: Vec<u8>,
}

impl fmt::Debug for PublicKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "PublicKey({} {})", self.name, self.fingerprint())
    }
}

impl PublicKey {
    /// Reads the public key file at `path`.
    pub fn read(path: &Path) -> Result<PublicKey, String> {
        let name = path.display().to_string();
        let text = toolhost_grants::readfile::read_regular_text(path, MAX_KEY_FILE)
            .map_err(|err| format!("could not read the public key {name}: {err}"))?;
        PublicKey::from_pem(&text, &name).map_err(|why| format!("the public key {name}: {why}"))
    }

    /// Parses a PEM `PUBLIC KEY`; `name` says where it came from.
    pub fn from_pem(text: &str, name: &str) -> Result<PublicKey, String> {
        let block = pem::parse(text.trim()).map_err(|_| {
            "not a PEM file (expected `-----BEGIN PUBLIC KEY-----`, as in the cosign.pub that \
             `cosign generate-key-pair` writes)"
                .to_owned()
        })?;
        match block.tag() {
            "PUBLIC KEY" => {}
            tag if tag.contains("PRIVATE KEY") => {
                return Err(format!(
                    "it is a private key (`{tag}`); trust the public half instead (cosign.pub, or \
                     `cosign public-key --key {name}`)"
                ));
            }
            tag => return Err(format!("a PEM `{tag}`, not a `PUBLIC KEY`")),
        }
        PublicKey::from_spki(block.contents(), name)
    }

    fn from_spki(spki: &[u8], name: &str) -> Result<PublicKey, String> {
        let (algorithm, curve, point) = yasna::parse_der(spki, |reader| {
            reader.read_sequence(|reader| {
                let (algorithm, curve) = reader.next().read_sequence(|reader| {
                    let algorithm = reader.next().read_oid()?;
                    let curve = reader.read_optional(|reader| reader.read_oid())?;
                    Ok((algorithm, curve))
                })?;
                let (point, bits) = reader.next().read_bitvec_bytes()?;
                Ok((algorithm, curve, (point, bits)))
            })
        })
        .map_err(|_| "not a DER SubjectPublicKeyInfo".to_owned())?;
        if algorithm != ObjectIdentifier::from_slice(EC_PUBLIC_KEY)
            || curve.is_none_or(|curve| curve != ObjectIdentifier::from_slice(P256))
        {
            return Err(format!("not an ECDSA P-256 public key ({KIND})"));
        }
        let (point, bits) = point;
        if bits != point.len() * 8 || point.len() != 65 || point[0] != 4 {
            return Err("its P-256 point is not an uncompressed point".to_owned());
        }
        Ok(PublicKey { name: name.to_owned(), spki: spki.to_vec(), point })
    }

    /// `sha256:HEX` of the DER SubjectPublicKeyInfo.
    pub fn fingerprint(&self) -> String {
        crate::reference::digest_of(&self.spki)
    }

    /// True when `signature` (ASN.1 DER ECDSA) is this key's over `message`
    /// (hashed with SHA-256, as cosign signs).
    pub fn verifies(&self, message: &[u8], signature_der: &[u8]) -> bool {
        signature::UnparsedPublicKey::new(&signature::ECDSA_P256_SHA256_ASN1, &self.point)
            .verify(message, signature_der)
            .is_ok()
    }
}

/// A private key to sign with.
pub struct SigningKey {
    pair: EcdsaKeyPair,
    public: PublicKey,
}

impl fmt::Debug for SigningKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SigningKey({} {})", self.public.name, self.public.fingerprint())
    }
}

impl SigningKey {
    /// Reads the private key file at `path`; `password` decrypts cosign's
    /// encrypted form (and is not needed for the plain ones).
    pub fn read(path: &Path, password: Option<&Secret>) -> Result<SigningKey, String> {
        let name = path.display().to_string();
        // A private key others can read is refused (see `readfile::read_private`);
        // a public key given by mistake is said to be one, whatever its mode.
        let text = match toolhost_grants::readfile::read_private_text(path, MAX_KEY_FILE) {
            Ok(text) => text,
            Err(err @ toolhost_grants::readfile::ReadError::Exposed { .. }) => {
                let public = toolhost_grants::readfile::read_regular_text(path, MAX_KEY_FILE)
                    .ok()
                    .and_then(|text| pem::parse(text.trim()).ok())
                    .is_some_and(|block| block.tag() == "PUBLIC KEY");
                if public {
                    return Err(format!(
                        "the signing key {name}: it is a public key; sign with the private key (cosign.key)"
                    ));
                }
                return Err(format!("could not use the signing key {name}: {err}"));
            }
            Err(err) => return Err(format!("could not use the signing key {name}: {err}")),
        };
        SigningKey::from_pem(&text, &name, password).map_err(|why| format!("the signing key {name}: {why}"))
    }

    /// Parses a private key file's text; `name` says where it came from.
    pub fn from_pem(text: &str, name: &str, password: Option<&Secret>) -> Result<SigningKey, String> {
        let block = pem::parse(text.trim()).map_err(|_| {
            "not a PEM file (expected cosign.key from `cosign generate-key-pair`, or a PEM `PRIVATE KEY` \
             or `EC PRIVATE KEY`)"
                .to_owned()
        })?;
        let pkcs8 = match block.tag() {
            "ENCRYPTED SIGSTORE PRIVATE KEY" | "ENCRYPTED COSIGN PRIVATE KEY" => {
                let Some(password) = password else {
                    return Err(format!("it is encrypted: set {PASSWORD_ENV} to its password"));
                };
                decrypt(block.contents(), password)?
            }
            "PRIVATE KEY" => block.contents().to_vec(),
            "EC PRIVATE KEY" => sec1_to_pkcs8(block.contents()),
            "PUBLIC KEY" => return Err("it is a public key; sign with the private key (cosign.key)".to_owned()),
            "ENCRYPTED PRIVATE KEY" => {
                return Err(
                    "an openssl-encrypted PKCS#8 key; decrypt it (`openssl pkcs8 -in KEY -out PLAIN`) or import \
                     it into cosign's format (`cosign import-key-pair --key KEY`)"
                        .to_owned(),
                );
            }
            tag => return Err(format!("a PEM `{tag}`, not a private key")),
        };
        let random = ring::rand::SystemRandom::new();
        let pair = EcdsaKeyPair::from_pkcs8(&signature::ECDSA_P256_SHA256_ASN1_SIGNING, &pkcs8, &random)
            .map_err(|why| format!("not a usable ECDSA P-256 private key ({why}; {KIND})"))?;
        let spki = spki_of(pair.public_key().as_ref());
        let public = PublicKey::from_spki(&spki, name)?;
        Ok(SigningKey { pair, public })
    }

    /// The public half (named after the private key's file).
    pub fn public_key(&self) -> &PublicKey {
        &self.public
    }

    /// An ASN.1 DER ECDSA P-256 signature over the SHA-256 of `message`.
    pub fn sign(&self, message: &[u8]) -> Result<Vec<u8>, String> {
        let random = ring::rand::SystemRandom::new();
        let signature =
            self.pair.sign(&random, message).map_err(|_| "the system's random number source failed".to_owned())?;
        Ok(signature.as_ref().to_vec())
    }
}

/// cosign's encrypted private key: the JSON inside the PEM.
#[derive(serde::Deserialize)]
struct Encrypted {
    kdf: Kdf,
    cipher: Cipher,
    ciphertext: String,
}

#[derive(serde::Deserialize)]
struct Kdf {
    name: String,
    params: KdfParams,
    salt: String,
}

#[derive(serde::Deserialize)]
struct KdfParams {
    #[serde(rename = "N")]
    n: u64,
    #[serde(rename = "r")]
    r: u32,
    #[serde(rename = "p")]
    p: u32,
}

#[derive(serde::Deserialize)]
struct Cipher {
    name: String,
    nonce: String,
}

/// Decrypts cosign's encrypted key body (the PEM's bytes) into PKCS#8 DER.
fn decrypt(body: &[u8], password: &Secret) -> Result<Vec<u8>, String> {
    use base64::Engine as _;
    use crypto_secretbox::aead::{Aead, KeyInit};
    let damaged = |what: &str| format!("it is not a cosign encrypted key as cosign writes it ({what})");
    let encrypted: Encrypted =
        toolhost_grants::json::strict_as(body).map_err(|_| damaged("its body is not the JSON expected"))?;
    if encrypted.kdf.name != "scrypt" || encrypted.cipher.name != "nacl/secretbox" {
        return Err(damaged(&format!(
            "it uses `{}` and `{}`, not scrypt and nacl/secretbox",
            encrypted.kdf.name.escape_debug(),
            encrypted.cipher.name.escape_debug()
        )));
    }
    let KdfParams { n, r, p } = encrypted.kdf.params;
    if !n.is_power_of_two() || n < 2 || r == 0 || p == 0 || p > 16 {
        return Err(damaged("its scrypt parameters are not valid"));
    }
    if 128u64.saturating_mul(n).saturating_mul(u64::from(r)) > MAX_SCRYPT_MEMORY {
        return Err(damaged(&format!(
            "its scrypt parameters ask for more than the {} MiB toolhost allows",
            MAX_SCRYPT_MEMORY >> 20
        )));
    }
    let base64 = base64::engine::general_purpose::STANDARD;
    let salt = base64.decode(&encrypted.kdf.salt).map_err(|_| damaged("its salt is not base64"))?;
    let nonce = base64.decode(&encrypted.cipher.nonce).map_err(|_| damaged("its nonce is not base64"))?;
    let ciphertext = base64.decode(&encrypted.ciphertext).map_err(|_| damaged("its ciphertext is not base64"))?;
    if nonce.len() != 24 {
        return Err(damaged("its nonce is not 24 bytes"));
    }
    let params = scrypt::Params::new(n.trailing_zeros() as u8, r, p, 32)
        .map_err(|_| damaged("its scrypt parameters are not valid"))?;
    let mut key = [0u8; 32];
    scrypt::scrypt(password.expose().as_bytes(), &salt, &params, &mut key)
        .map_err(|_| damaged("its scrypt parameters are not valid"))?;
    let cipher = crypto_secretbox::XSalsa20Poly1305::new(&key.into());
    key.fill(0);
    cipher
        .decrypt(crypto_secretbox::Nonce::from_slice(&nonce), ciphertext.as_slice())
        .map_err(|_| format!("could not decrypt it: the password in {PASSWORD_ENV} is wrong, or the file is damaged"))
}

/// Wraps a SEC1 `ECPrivateKey` (DER) for P-256 as PKCS#8, which ring reads.
fn sec1_to_pkcs8(sec1: &[u8]) -> Vec<u8> {
    yasna::construct_der(|writer| {
        writer.write_sequence(|writer| {
            writer.next().write_u8(0);
            writer.next().write_sequence(|writer| {
                writer.next().write_oid(&ObjectIdentifier::from_slice(EC_PUBLIC_KEY));
                writer.next().write_oid(&ObjectIdentifier::from_slice(P256));
            });
            writer.next().write_bytes(sec1);
        })
    })
}

/// The DER SubjectPublicKeyInfo of a P-256 point.
fn spki_of(point: &[u8]) -> Vec<u8> {
    yasna::construct_der(|writer| {
        writer.write_sequence(|writer| {
            writer.next().write_sequence(|writer| {
                writer.next().write_oid(&ObjectIdentifier::from_slice(EC_PUBLIC_KEY));
                writer.next().write_oid(&ObjectIdentifier::from_slice(P256));
            });
            writer.next().write_bitvec_bytes(point, point.len() * 8);
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A key made for these tests with `openssl ecparam -name prime256v1 -genkey -noout` (SEC1), and
    /// its public half (`openssl ec -pubout`).
    const SEC1: &str = "-----BEGIN EC PRIVATE KEY-----
MHcCAQEEIOFzn03MPvtjZRnBavimasAwkt0M09s6Jz6Xymy3pDvCoAoGCCqGSM49
AwEHoUQDQgAEcoDa8+XO8Ra2NMY8Bum+IwORep828vC+m+Qjx/s6Mx/HE8I20kqW
60P8GladdswH3qDxRM7q6YE1CzyDnIDUsw==
-----END EC PRIVATE KEY-----
";
    const SEC1_PUB: &str = "-----BEGIN PUBLIC KEY-----
MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEcoDa8+XO8Ra2NMY8Bum+IwORep82
8vC+m+Qjx/s6Mx/HE8I20kqW60P8GladdswH3qDxRM7q6YE1CzyDnIDUsw==
-----END PUBLIC KEY-----
";
    /// A key pair made for these tests by `cosign generate-key-pair` (cosign 2.5.0),
    /// with `COSIGN_PASSWORD=pw`.
    const COSIGN_KEY: &str = "-----BEGIN ENCRYPTED SIGSTORE PRIVATE KEY-----
eyJrZGYiOnsibmFtZSI6InNjcnlwdCIsInBhcmFtcyI6eyJOIjo2NTUzNiwiciI6
OCwicCI6MX0sInNhbHQiOiJQZW9NcGwyTy93WEdnSnJBa2RGWENaOGs0a2pRK25O
Sm9NWjh0U2NGRFRnPSJ9LCJjaXBoZXIiOnsibmFtZSI6Im5hY2wvc2VjcmV0Ym94
Iiwibm9uY2UiOiJjOExzRGU1cVhSam9PVit6R3psRTVZS1BpUEFQcUZ5VSJ9LCJj
aXBoZXJ0ZXh0IjoiWUpZQ2xPMy9ZYVYzVTRaeUl2QURzbVgwbG5yWENlNTFBa3Zu
ZitOaGNEZjNBc0puNTdQZnIrcW1SOTV1blkwWmdtalIvMDFSZ1dzK1dlQkFMTm1l
TDU5K01DWDMrMlN4ckpXeFpYT2dXYlJLU1FBWFBINFRINlNKam5FVXNsYkp3aFM0
SWx1SXNXSlQ1K2NEVDZiNGdubTVGL2ZuZmh2YXd3eUY4UzJ6WmlsbGdTMWZleC9E
T0xaS2YwWWI0RU9CK0RKSXZjSTljd0xVbFE9PSJ9
-----END ENCRYPTED SIGSTORE PRIVATE KEY-----
";
    const COSIGN_PUB: &str = "-----BEGIN PUBLIC KEY-----
MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEoGacg2T8OVP3HFXJFbp9YaU65Ee4
9WBQlCh2pWa9cJaj7+qx4Oqh/OQ8tvTlQplLkI9k5ihJaxa62N5kDimn3A==
-----END PUBLIC KEY-----
";

    fn encrypted(body: serde_json::Value) -> String {
        pem::encode(&pem::Pem::new("ENCRYPTED SIGSTORE PRIVATE KEY", body.to_string().into_bytes()))
    }

    #[test]
    fn rejects_what_is_not_a_p256_public_key_with_the_reason() {
        let cases = [
            ("", "not a PEM file"),
            ("hello", "not a PEM file"),
            ("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----", "not a `PUBLIC KEY`"),
            ("-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----", "not a DER SubjectPublicKeyInfo"),
            (SEC1, "it is a private key"),
            // An Ed25519 public key.
            (
                "-----BEGIN PUBLIC KEY-----\nMCowBQYDK2VwAyEAGb9ECWmEzf6FQbrBZ9w7lshQhqowtrbLDFw4rXAxZuE=\n-----END PUBLIC KEY-----",
                "not an ECDSA P-256 public key",
            ),
        ];
        for (text, expected) in cases {
            let err = PublicKey::from_pem(text, "key.pub").unwrap_err();
            assert!(err.contains(expected), "{text}: {err}");
        }
    }

    #[test]
    fn rejects_what_is_not_a_usable_private_key_with_the_reason() {
        let box_of = |name: &str| {
            encrypted(serde_json::json!({
                "kdf": {"name": "scrypt", "params": {"N": 1024, "r": 8, "p": 1}, "salt": ""},
                "cipher": {"name": name, "nonce": ""},
                "ciphertext": "",
            }))
        };
        let costly = encrypted(serde_json::json!({
            "kdf": {"name": "scrypt", "params": {"N": 1u64 << 30, "r": 8, "p": 1}, "salt": ""},
            "cipher": {"name": "nacl/secretbox", "nonce": ""},
            "ciphertext": "",
        }));
        let cases = [
            ("".to_owned(), None, "not a PEM file"),
            (COSIGN_KEY.to_owned(), None, "it is encrypted: set COSIGN_PASSWORD"),
            (COSIGN_KEY.to_owned(), Some("wrong"), "the password in COSIGN_PASSWORD is wrong"),
            (
                "-----BEGIN ENCRYPTED SIGSTORE PRIVATE KEY-----\nAAAA\n-----END ENCRYPTED SIGSTORE PRIVATE KEY-----"
                    .to_owned(),
                Some("pw"),
                "not a cosign encrypted key",
            ),
            (box_of("aes-gcm"), Some("pw"), "not scrypt and nacl/secretbox"),
            (costly, Some("pw"), "MiB toolhost allows"),
            (
                "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----".to_owned(),
                None,
                "not a usable ECDSA P-256 private key",
            ),
            (COSIGN_PUB.to_owned(), None, "it is a public key"),
        ];
        for (text, password, expected) in cases {
            let password = password.map(Secret::new);
            let err = SigningKey::from_pem(&text, "cosign.key", password.as_ref()).unwrap_err();
            assert!(err.contains(expected), "{text}: {err}");
        }
    }

    #[test]
    fn keys_sign_what_their_public_halves_verify_and_nothing_else() {
        let cosign = SigningKey::from_pem(COSIGN_KEY, "cosign.key", Some(&Secret::new("pw"))).unwrap();
        let sec1 = SigningKey::from_pem(SEC1, "ec.pem", None).unwrap();
        let pkcs8 = pem::encode(&pem::Pem::new("PRIVATE KEY", sec1_to_pkcs8(pem::parse(SEC1).unwrap().contents())));
        let pkcs8 = SigningKey::from_pem(&pkcs8, "pkcs8.pem", None).unwrap();
        let cosign_pub = PublicKey::from_pem(COSIGN_PUB, "cosign.pub").unwrap();
        let sec1_pub = PublicKey::from_pem(SEC1_PUB, "ec.pub").unwrap();
        assert_eq!(cosign.public_key().fingerprint(), cosign_pub.fingerprint());
        assert_eq!(sec1.public_key().fingerprint(), sec1_pub.fingerprint());
        assert_eq!(pkcs8.public_key().fingerprint(), sec1_pub.fingerprint());
        assert_ne!(cosign_pub.fingerprint(), sec1_pub.fingerprint());
        for (key, public, other) in [(&cosign, &cosign_pub, &sec1_pub), (&sec1, &sec1_pub, &cosign_pub)] {
            let signature = key.sign(b"payload").unwrap();
            assert!(public.verifies(b"payload", &signature));
            assert!(!public.verifies(b"payload2", &signature));
            assert!(!other.verifies(b"payload", &signature));
            let mut flipped = signature.clone();
            let last = flipped.len() - 1;
            flipped[last] ^= 1;
            assert!(!public.verifies(b"payload", &flipped));
        }
    }
}
