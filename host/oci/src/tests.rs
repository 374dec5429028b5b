use super::*;
use std::path::Path;

const PIN: &str = "sha256:1111111111111111111111111111111111111111111111111111111111111111";
const OTHER: &str = "sha256:2222222222222222222222222222222222222222222222222222222222222222";

#[test]
fn check_sources_names_every_way_a_folder_drifts_from_the_config() {
    let dir = tempfile::tempdir().unwrap();
    let sources: BTreeMap<String, Source> = [
        ("hash", format!("127.0.0.1:5000/hash:1@{PIN}")),
        ("moved", "127.0.0.1:5000/moved:2".to_owned()),
        ("edited", "127.0.0.1:5000/edited:1".to_owned()),
        ("fine", "127.0.0.1:5000/fine:1".to_owned()),
        ("never", "127.0.0.1:5000/never:1".to_owned()),
    ]
    .into_iter()
    .map(|(name, source)| (name.to_owned(), source.parse().unwrap()))
    .collect();
    let entry = |source: &str, digest: &str, wasm: &str| Locked {
        source: source.to_owned(),
        digest: digest.to_owned(),
        wasm: wasm.to_owned(),
        manifest: None,
        signer: None,
    };
    let lock = Lock {
        version: 1,
        plugins: BTreeMap::from([
            ("hash".to_owned(), entry(&format!("127.0.0.1:5000/hash:1@{PIN}"), OTHER, PIN)),
            ("moved".to_owned(), entry("127.0.0.1:5000/moved:1", OTHER, PIN)),
            ("edited".to_owned(), entry("127.0.0.1:5000/edited:1", OTHER, PIN)),
            ("fine".to_owned(), entry("127.0.0.1:5000/fine:1", OTHER, PIN)),
        ]),
    };
    let mut staged = store::Staged::new(dir.path());
    store::stage_lock(&mut staged, &lock).unwrap();
    staged.commit().unwrap();
    let hex = PIN.trim_start_matches("sha256:").to_owned();
    let loaded = [
        ("hash".to_owned(), hex.clone()),
        ("moved".to_owned(), hex.clone()),
        ("edited".to_owned(), OTHER.trim_start_matches("sha256:").to_owned()),
        ("fine".to_owned(), hex),
    ];
    let notices = check_sources(&sources, dir.path(), &loaded, &Trust::default());
    let expected = [
        "edited: edited.wasm changed since it was pulled",
        &format!("hash: {} holds {OTHER}, not the pinned {PIN}", dir.path().display()),
        "moved: ",
        "never: the config's source 127.0.0.1:5000/never:1 has not been pulled",
    ];
    assert_eq!(notices.len(), expected.len(), "{notices:#?}");
    for (notice, expected) in notices.iter().zip(expected) {
        assert!(notice.starts_with(expected), "{notice} / {expected}");
    }
    assert!(notices[2].contains("pulled from 127.0.0.1:5000/moved:1, but the config's source is"), "{}", notices[2]);
    assert!(check_sources(&BTreeMap::new(), Path::new("/nonexistent"), &[], &Trust::default()).is_empty());

    // A scope that now requires signatures: the plugins pulled without one are named.
    let trust = Trust::new(vec![TrustEntry {
        scope: "127.0.0.1:5000/fine".parse().unwrap(),
        keys: vec!["acme.pub".into()],
        require: true,
    }])
    .unwrap();
    let notices = check_sources(&sources, dir.path(), &loaded, &trust);
    assert_eq!(notices.len(), expected.len() + 1, "{notices:#?}");
    assert!(
        notices.iter().any(|notice| notice.starts_with("fine: ")
            && notice.contains("without a verified signature, but `[[trust]]` for `127.0.0.1:5000/fine` requires one")),
        "{notices:#?}"
    );
}
