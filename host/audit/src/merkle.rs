//! The Merkle tree a signed tree head commits to, hashed as Certificate
//! Transparency's (RFC 6962 §2.1, RFC 9162 §2.1): a leaf is
//! `SHA-256(0x00 || line)`, an inner node `SHA-256(0x01 || left || right)`,
//! and a tree of `n` leaves splits after the largest power of two below `n`.
//! So any RFC 9162 library checks a receipt's inclusion proof.
//!
//! The tree is built bottom-up, level by level, the last node of an odd
//! level carried up unchanged: the same tree as RFC 6962's recursion, and
//! every leaf's proof read off it without hashing again.

use sha2::{Digest, Sha256};

/// A SHA-256 digest.
pub type Hash = [u8; 32];

/// The hash of a leaf: `SHA-256(0x00 || bytes)`.
pub fn leaf(bytes: &[u8]) -> Hash {
    let mut hasher = Sha256::new();
    hasher.update([0u8]);
    hasher.update(bytes);
    hasher.finalize().into()
}

/// The hash of an inner node: `SHA-256(0x01 || left || right)`.
pub fn node(left: &Hash, right: &Hash) -> Hash {
    let mut hasher = Sha256::new();
    hasher.update([1u8]);
    hasher.update(left);
    hasher.update(right);
    hasher.finalize().into()
}

/// A tree over a batch of leaf hashes: every level, leaves first.
pub struct Tree {
    levels: Vec<Vec<Hash>>,
}

impl Tree {
    /// The tree over `leaves` (leaf hashes, in order).
    pub fn new(leaves: Vec<Hash>) -> Tree {
        let mut levels = vec![leaves];
        while levels.last().is_some_and(|level| level.len() > 1) {
            let below = levels.last().map(Vec::as_slice).unwrap_or_default();
            let above = below
                .chunks(2)
                .map(|pair| match pair {
                    [left, right] => node(left, right),
                    [single] => *single,
                    _ => unreachable!("chunks(2) yields one or two"),
                })
                .collect();
            levels.push(above);
        }
        Tree { levels }
    }

    /// How many leaves.
    pub fn size(&self) -> usize {
        self.levels[0].len()
    }

    /// The root hash (`SHA-256("")` for no leaves, as RFC 6962 says).
    pub fn root(&self) -> Hash {
        match self.levels.last().and_then(|level| level.first()) {
            Some(root) => *root,
            None => Sha256::digest([]).into(),
        }
    }

    /// The inclusion proof (RFC 9162 §2.1.3.1) of leaf `index`: the
    /// siblings on its way to the root, nearest first.
    pub fn proof(&self, index: usize) -> Vec<Hash> {
        let mut proof = Vec::new();
        let mut at = index;
        for level in &self.levels[..self.levels.len() - 1] {
            let sibling = at ^ 1;
            if sibling < level.len() {
                proof.push(level[sibling]);
            }
            at >>= 1;
        }
        proof
    }
}

/// Whether `proof` shows `leaf` at `index` in a tree of `size` leaves whose
/// root is `root` (RFC 9162 §2.1.3.2).
pub fn verify_inclusion(leaf: &Hash, index: u64, size: u64, proof: &[Hash], root: &Hash) -> bool {
    if index >= size {
        return false;
    }
    let (mut fnode, mut snode) = (index, size - 1);
    let mut hash = *leaf;
    for sibling in proof {
        if snode == 0 {
            return false;
        }
        if fnode & 1 == 1 || fnode == snode {
            hash = node(sibling, &hash);
            while fnode & 1 == 0 && fnode != 0 {
                fnode >>= 1;
                snode >>= 1;
            }
        } else {
            hash = node(&hash, sibling);
        }
        fnode >>= 1;
        snode >>= 1;
    }
    snode == 0 && hash == *root
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::keys::hex;

    /// RFC 6962's reference leaves (certificate-transparency's
    /// merkle_tree_test, transparency-dev/merkle's testonly).
    const LEAVES: [&[u8]; 8] = [
        b"",
        b"\x00",
        b"\x10",
        b"\x20\x21",
        b"\x30\x31",
        b"\x40\x41\x42\x43",
        b"\x50\x51\x52\x53\x54\x55\x56\x57",
        b"\x60\x61\x62\x63\x64\x65\x66\x67\x68\x69\x6a\x6b\x6c\x6d\x6e\x6f",
    ];

    /// The root after each number of leaves, 0 to 8.
    const ROOTS: [&str; 9] = [
        "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
        "6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d",
        "fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125",
        "aeb6bcfe274b70a14fb067a5e5578264db0fa9b51af5e0ba159158f329e06e77",
        "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
        "4e3bbb1f7b478dcfe71fb631631519a3bca12c9aefca1612bfce4c13a86264d4",
        "76e67dadbcdf1e10e1b74ddc608abd2f98dfb16fbce75277b5232a127f2087ef",
        "ddb89be403809e325750d3d263cd78929c2942b7942a34b77e122c9594a74c8c",
        "5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328",
    ];

    fn hashes(count: usize) -> Vec<Hash> {
        LEAVES[..count].iter().map(|bytes| leaf(bytes)).collect()
    }

    /// RFC 6962's MTH, by its recursion, to hold the level-by-level tree to.
    fn reference_root(leaves: &[Hash]) -> Hash {
        match leaves.len() {
            0 => Sha256::digest([]).into(),
            1 => leaves[0],
            n => {
                let k = 1 << (usize::BITS - (n - 1).leading_zeros() - 1);
                node(&reference_root(&leaves[..k]), &reference_root(&leaves[k..]))
            }
        }
    }

    /// RFC 6962's PATH, by its recursion.
    fn reference_path(index: usize, leaves: &[Hash]) -> Vec<Hash> {
        let n = leaves.len();
        if n <= 1 {
            return Vec::new();
        }
        let k = 1 << (usize::BITS - (n - 1).leading_zeros() - 1);
        let (mut path, sibling) = if index < k {
            (reference_path(index, &leaves[..k]), reference_root(&leaves[k..]))
        } else {
            (reference_path(index - k, &leaves[k..]), reference_root(&leaves[..k]))
        };
        path.push(sibling);
        path
    }

    #[test]
    fn roots_are_rfc_6962s() {
        for (count, expected) in ROOTS.iter().enumerate() {
            assert_eq!(hex(&Tree::new(hashes(count)).root()), *expected, "{count} leaves");
        }
    }

    #[test]
    fn proofs_are_rfc_6962s_known_paths() {
        let tree = Tree::new(hashes(8));
        let path = |index| tree.proof(index).iter().map(|hash| hex(hash)).collect::<Vec<_>>();
        assert_eq!(
            path(0),
            [
                "96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7",
                "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
                "6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4",
            ]
        );
        assert_eq!(
            path(5),
            [
                "bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b",
                "ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0",
                "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
            ]
        );
    }

    #[test]
    fn every_proof_checks_and_every_wrong_one_does_not() {
        let many: Vec<Hash> = (0..70u32).map(|n| leaf(&n.to_be_bytes())).collect();
        for size in 1..=many.len() {
            let leaves = &many[..size];
            let tree = Tree::new(leaves.to_vec());
            let root = tree.root();
            assert_eq!(root, reference_root(leaves), "size {size}");
            for index in 0..size {
                let proof = tree.proof(index);
                assert_eq!(proof, reference_path(index, leaves), "size {size} index {index}");
                let (i, n) = (index as u64, size as u64);
                assert!(verify_inclusion(&leaves[index], i, n, &proof, &root), "size {size} index {index}");
                // Another leaf, index or root; a proof cut, grown or changed. (The
                // size is not bound by the hashes: a head signs it with the root.)
                let other = leaf(b"not in the tree");
                assert!(!verify_inclusion(&other, i, n, &proof, &root));
                assert!(!verify_inclusion(&leaves[index], i, n, &proof, &other));
                assert!(!verify_inclusion(&leaves[index], n, n, &proof, &root));
                if size > 1 {
                    let moved = (index + 1) % size;
                    assert!(!verify_inclusion(&leaves[index], moved as u64, n, &proof, &root));
                    assert!(!verify_inclusion(&leaves[index], i, n, &proof[1..], &root));
                    let mut changed = proof.clone();
                    changed[0][0] ^= 1;
                    assert!(!verify_inclusion(&leaves[index], i, n, &changed, &root));
                }
                let mut longer = proof.clone();
                longer.push(root);
                assert!(!verify_inclusion(&leaves[index], i, n, &longer, &root));
            }
        }
    }

    #[test]
    fn a_leaf_cannot_pass_for_an_inner_node() {
        // The 0x00/0x01 prefixes: the bytes of two children, as one leaf,
        // do not hash to their parent.
        let (a, b) = (leaf(b"a"), leaf(b"b"));
        let mut joined = a.to_vec();
        joined.extend_from_slice(&b);
        assert_ne!(leaf(&joined), node(&a, &b));
    }
}
