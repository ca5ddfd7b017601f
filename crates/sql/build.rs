//! Embeds the numbered SQL files of the top-level `migrations/` folder, in
//! order, so adding a file is all a schema change needs.

use std::{env, fs, path::Path};

fn main() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../migrations");
    println!("cargo:rerun-if-changed={}", dir.display());
    let mut files: Vec<(u32, String)> = fs::read_dir(&dir)
        .expect("migrations/ folder")
        .map(|entry| entry.expect("migrations/ entry").file_name())
        .filter_map(|name| {
            let name = name.into_string().ok()?;
            let stem = name.strip_suffix(".sql")?;
            let (number, _) = stem.split_once('_')?;
            Some((number.parse().ok()?, name))
        })
        .collect();
    files.sort();
    for pair in files.windows(2) {
        assert!(
            pair[0].0 != pair[1].0,
            "two migrations numbered {}",
            pair[0].0
        );
    }
    let mut out = String::from("&[\n");
    for (version, name) in &files {
        let path = dir.join(name).canonicalize().expect("migration path");
        println!("cargo:rerun-if-changed={}", path.display());
        out.push_str(&format!(
            "    Migration {{ version: {version}, name: {name:?}, sql: include_str!({path:?}) }},\n",
            path = path.display().to_string()
        ));
    }
    out.push_str("]\n");
    let target = Path::new(&env::var("OUT_DIR").unwrap()).join("migrations.rs");
    fs::write(target, out).expect("write migrations.rs");
}
