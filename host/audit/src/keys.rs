//! The keys that sign and check audit lines: Ed25519 or ECDSA P-256 through
//! ring, private keys as PKCS#8 (PEM `PRIVATE KEY` or DER), public keys as
//! SubjectPublicKeyInfo (PEM `PUBLIC KEY` or DER), as openssl writes them.
//! Every key file is read through `readfile` (a regular file, bounded), since
//! the config can point anywhere.

use ring::rand::SystemRandom;
use ring::signature::{self, EcdsaKeyPair, Ed25519KeyPair, KeyPair, UnparsedPublicKey};
use sha2::{Digest, Sha256};
use std::fmt;
use std::io::Write;
use std::path::{Path, PathBuf};
use toolhost_grants::readfile;

/// The most a key file may hold.
const KEY_FILE_LIMIT: u64 = 64 << 10;

/// The DER of an Ed25519 SubjectPublicKeyInfo up to the 32-byte key.
const ED25519_SPKI: &[u8] = &[0x30, 0x2a, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x03, 0x21, 0x00];
/// The DER of a P-256 SubjectPublicKeyInfo up to the 65-byte uncompressed point.
const P256_SPKI: &[u8] = &[
    0x30, 0x59, 0x30, 0x13, 0x06, 0x07, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01, 0x06, 0x08, 0x2a, 0x86, 0x48, 0xce,
    0x3d, 0x03, 0x01, 0x07, 0x03, 0x42, 0x00,
];

/// A signature algorithm.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize)]
pub enum Algorithm {
    /// Ed25519 (the default for new keys).
    #[serde(rename = "ed25519")]
    Ed25519,
    /// ECDSA over P-256 with SHA-256, signatures ASN.1 DER.
    #[serde(rename = "ecdsa-p256")]
    EcdsaP256,
}

impl Algorithm {
    /// Its name in the config and in audit lines.
    pub fn as_str(self) -> &'static str {
        match self {
            Algorithm::Ed25519 => "ed25519",
            Algorithm::EcdsaP256 => "ecdsa-p256",
        }
    }
}

impl fmt::Display for Algorithm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for Algorithm {
    type Err = String;
    fn from_str(text: &str) -> Result<Algorithm, String> {
        match text {
            "ed25519" => Ok(Algorithm::Ed25519),
            "ecdsa-p256" => Ok(Algorithm::EcdsaP256),
            other => Err(format!("unknown algorithm `{other}` (use `ed25519` or `ecdsa-p256`)")),
        }
    }
}

/// A public key that checks audit lines.
#[derive(Clone)]
pub struct PublicKey {
    algorithm: Algorithm,
    /// The raw key (Ed25519's 32 bytes, P-256's uncompressed point).
    raw: Vec<u8>,
    /// `sha256:` and the hex SHA-256 of the DER SubjectPublicKeyInfo.
    fingerprint: String,
}

impl fmt::Debug for PublicKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "PublicKey({} {})", self.algorithm, self.fingerprint)
    }
}

impl PublicKey {
    /// Reads a public key file (PEM `PUBLIC KEY` or DER SubjectPublicKeyInfo).
    pub fn load(path: &Path) -> Result<PublicKey, String> {
        let bytes = read_key(path)?;
        let der = der_of(&bytes, "PUBLIC KEY", path)?;
        PublicKey::from_spki(&der).ok_or_else(|| {
            format!(
                "{}: not an Ed25519 or ECDSA P-256 public key (a PEM `PUBLIC KEY`, as `toolhost audit keygen` or \
                 `openssl pkey -pubout` writes)",
                path.display()
            )
        })
    }

    /// The key in a DER SubjectPublicKeyInfo, if it is one of ours.
    pub fn from_spki(der: &[u8]) -> Option<PublicKey> {
        let (algorithm, raw) = if let Some(raw) = der.strip_prefix(ED25519_SPKI).filter(|raw| raw.len() == 32) {
            (Algorithm::Ed25519, raw)
        } else {
            (Algorithm::EcdsaP256, der.strip_prefix(P256_SPKI).filter(|raw| raw.len() == 65 && raw[0] == 4)?)
        };
        Some(PublicKey { algorithm, raw: raw.to_vec(), fingerprint: fingerprint(der) })
    }

    fn from_raw(algorithm: Algorithm, raw: &[u8]) -> PublicKey {
        let prefix = match algorithm {
            Algorithm::Ed25519 => ED25519_SPKI,
            Algorithm::EcdsaP256 => P256_SPKI,
        };
        let spki = [prefix, raw].concat();
        PublicKey { algorithm, raw: raw.to_vec(), fingerprint: fingerprint(&spki) }
    }

    /// The DER SubjectPublicKeyInfo.
    pub fn spki(&self) -> Vec<u8> {
        let prefix = match self.algorithm {
            Algorithm::Ed25519 => ED25519_SPKI,
            Algorithm::EcdsaP256 => P256_SPKI,
        };
        [prefix, &self.raw].concat()
    }

    /// Its algorithm.
    pub fn algorithm(&self) -> Algorithm {
        self.algorithm
    }

    /// `sha256:HEX` of its DER SubjectPublicKeyInfo, as audit lines name it.
    pub fn fingerprint(&self) -> &str {
        &self.fingerprint
    }

    /// Whether `signature` is this key's over `message`.
    pub fn verifies(&self, message: &[u8], signature: &[u8]) -> bool {
        let algorithm: &dyn signature::VerificationAlgorithm = match self.algorithm {
            Algorithm::Ed25519 => &signature::ED25519,
            Algorithm::EcdsaP256 => &signature::ECDSA_P256_SHA256_ASN1,
        };
        UnparsedPublicKey::new(algorithm, &self.raw).verify(message, signature).is_ok()
    }
}

/// A private key that signs audit lines.
pub struct SigningKey {
    pair: Pair,
    public: PublicKey,
}

enum Pair {
    Ed25519(Ed25519KeyPair),
    EcdsaP256(EcdsaKeyPair, SystemRandom),
}

impl fmt::Debug for SigningKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SigningKey({} {})", self.public.algorithm, self.public.fingerprint)
    }
}

impl SigningKey {
    /// Reads a PKCS#8 private key file (PEM `PRIVATE KEY` or DER); when
    /// `algorithm` is given, the key must be of it.
    pub fn load(path: &Path, algorithm: Option<Algorithm>) -> Result<SigningKey, String> {
        // A private key others can read is refused (see `readfile::read_private`).
        let bytes = readfile::read_private(path, KEY_FILE_LIMIT)
            .map_err(|err| format!("could not use key file {}: {err}", path.display()))?;
        let der = der_of(&bytes, "PRIVATE KEY", path)?;
        let key = SigningKey::from_pkcs8(&der).ok_or_else(|| {
            format!(
                "{}: not an Ed25519 or ECDSA P-256 private key in PKCS#8 (a PEM `PRIVATE KEY`, as `toolhost audit \
                 keygen` or `openssl genpkey -algorithm ed25519` writes)",
                path.display()
            )
        })?;
        if let Some(wanted) = algorithm
            && wanted != key.public.algorithm
        {
            return Err(format!(
                "{}: holds an {} key, but `[audit] algorithm` is `{wanted}`",
                path.display(),
                key.public.algorithm
            ));
        }
        Ok(key)
    }

    /// The key in PKCS#8 DER, if it is one of ours.
    pub fn from_pkcs8(der: &[u8]) -> Option<SigningKey> {
        if let Ok(pair) = Ed25519KeyPair::from_pkcs8_maybe_unchecked(der) {
            let public = PublicKey::from_raw(Algorithm::Ed25519, pair.public_key().as_ref());
            return Some(SigningKey { pair: Pair::Ed25519(pair), public });
        }
        let random = SystemRandom::new();
        let pair = EcdsaKeyPair::from_pkcs8(&signature::ECDSA_P256_SHA256_ASN1_SIGNING, der, &random).ok()?;
        let public = PublicKey::from_raw(Algorithm::EcdsaP256, pair.public_key().as_ref());
        Some(SigningKey { pair: Pair::EcdsaP256(pair, random), public })
    }

    /// A new key, its PKCS#8 DER.
    pub fn generate(algorithm: Algorithm) -> Result<Vec<u8>, String> {
        let random = SystemRandom::new();
        let document = match algorithm {
            Algorithm::Ed25519 => Ed25519KeyPair::generate_pkcs8(&random),
            Algorithm::EcdsaP256 => EcdsaKeyPair::generate_pkcs8(&signature::ECDSA_P256_SHA256_ASN1_SIGNING, &random),
        }
        .map_err(|_| "could not generate a key (no system randomness?)".to_owned())?;
        Ok(document.as_ref().to_vec())
    }

    /// Its public half.
    pub fn public(&self) -> &PublicKey {
        &self.public
    }

    /// The signature over `message`.
    pub fn sign(&self, message: &[u8]) -> Vec<u8> {
        match &self.pair {
            Pair::Ed25519(pair) => pair.sign(message).as_ref().to_vec(),
            // Fails only without system randomness; an empty signature then
            // fails verification rather than stopping the log.
            Pair::EcdsaP256(pair, random) => {
                pair.sign(random, message).map(|sig| sig.as_ref().to_vec()).unwrap_or_default()
            }
        }
    }
}

/// Writes a new key pair into `dir` (made, readable by its owner only, when
/// it does not exist): `audit.key` (PKCS#8 PEM, readable by its owner only)
/// and `audit.pub`. Refuses to replace either. Returns both paths.
pub fn keygen(dir: &Path, algorithm: Algorithm) -> Result<(PathBuf, PathBuf), String> {
    {
        use std::os::unix::fs::DirBuilderExt;
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .map_err(|err| format!("could not make the folder {}: {err}", dir.display()))?;
    }
    let private = dir.join("audit.key");
    let public = dir.join("audit.pub");
    for path in [&private, &public] {
        if path.symlink_metadata().is_ok() {
            return Err(format!(
                "{} already exists; toolhost does not replace a key (move it away first)",
                path.display()
            ));
        }
    }
    let der = SigningKey::generate(algorithm)?;
    let key = SigningKey::from_pkcs8(&der).ok_or("the generated key does not load")?;
    let private_pem = pem::encode(&pem::Pem::new("PRIVATE KEY", der));
    let public_pem = pem::encode(&pem::Pem::new("PUBLIC KEY", key.public.spki()));
    write_new(&private, private_pem.as_bytes(), 0o600)?;
    write_new(&public, public_pem.as_bytes(), 0o644)?;
    Ok((private, public))
}

/// Creates `path` (which must not exist) with `mode`, whole.
fn write_new(path: &Path, bytes: &[u8], mode: u32) -> Result<(), String> {
    use std::os::unix::fs::OpenOptionsExt;
    let fail = |err: std::io::Error| format!("could not write {}: {err}", path.display());
    let mut file = std::fs::OpenOptions::new().write(true).create_new(true).mode(mode).open(path).map_err(fail)?;
    file.write_all(bytes).and_then(|()| file.sync_all()).map_err(|err| {
        let _ = std::fs::remove_file(path);
        fail(err)
    })
}

fn read_key(path: &Path) -> Result<Vec<u8>, String> {
    readfile::read_regular(path, KEY_FILE_LIMIT)
        .map_err(|err| format!("could not read key file {}: {err}", path.display()))
}

/// The DER in `bytes`: a PEM block labelled `label`, or DER as it is.
fn der_of(bytes: &[u8], label: &str, path: &Path) -> Result<Vec<u8>, String> {
    if bytes.first() == Some(&0x30) {
        return Ok(bytes.to_vec());
    }
    let text = std::str::from_utf8(bytes).map_err(|_| format!("{}: neither PEM nor DER", path.display()))?;
    let block = pem::parse(text.trim()).map_err(|_| format!("{}: not a PEM file", path.display()))?;
    if block.tag() != label {
        return Err(format!("{}: holds a PEM `{}`, not a `{label}`", path.display(), block.tag()));
    }
    Ok(block.into_contents())
}

fn fingerprint(spki: &[u8]) -> String {
    format!("sha256:{}", hex(&Sha256::digest(spki)))
}

/// Lower-case hex.
pub fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let digits = bytes.iter().flat_map(|byte| [DIGITS[usize::from(byte >> 4)], DIGITS[usize::from(byte & 0xf)]]);
    String::from_utf8(digits.collect()).expect("hex digits are ASCII")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signs_and_verifies_both_algorithms() {
        for algorithm in [Algorithm::Ed25519, Algorithm::EcdsaP256] {
            let key = SigningKey::from_pkcs8(&SigningKey::generate(algorithm).unwrap()).unwrap();
            let public = PublicKey::from_spki(&key.public().spki()).unwrap();
            assert_eq!(public.algorithm(), algorithm);
            assert_eq!(public.fingerprint(), key.public().fingerprint());
            let sig = key.sign(b"line");
            assert!(public.verifies(b"line", &sig));
            assert!(!public.verifies(b"lime", &sig));
        }
    }

    #[test]
    fn keygen_writes_a_pair_and_refuses_to_replace_it() {
        let dir = tempfile::tempdir().unwrap();
        let (private, public) = keygen(dir.path(), Algorithm::EcdsaP256).unwrap();
        let key = SigningKey::load(&private, Some(Algorithm::EcdsaP256)).unwrap();
        assert_eq!(PublicKey::load(&public).unwrap().fingerprint(), key.public().fingerprint());
        let err = SigningKey::load(&private, Some(Algorithm::Ed25519)).unwrap_err();
        assert!(err.contains("`[audit] algorithm` is `ed25519`"), "{err}");
        assert!(keygen(dir.path(), Algorithm::Ed25519).unwrap_err().contains("already exists"));
        let err = PublicKey::load(&private).unwrap_err();
        assert!(err.contains("not a `PUBLIC KEY`"), "{err}");
    }
}
