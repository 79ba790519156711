//! `imt.json`: fixed-depth (zk-kit IMT) trees in cairn's encodings. The
//! trees are those of `typescript.json`'s `imt` section (defined once, in
//! `test-vectors/ts/generate.mjs`): every root, zero hash and zk-kit proof
//! there must equal cairn's (a disagreement fails the generator), and each
//! root written names `@zk-kit/imt` as agreeing. Then cairn's own proofs
//! (membership at zk-kit's proof positions, consistency between sizes),
//! verified, round-tripped and compared with a fresh tree's, and named
//! proofs a verifier must reject, with the stage and reason cairn rejects
//! them at.

use anyhow::{Context, Result, bail, ensure};
use cairn_core::hex::{parse_hash, to_hex};
use cairn_core::{
    Arity, ConsistencyProof, Hash, HashKind, LeanImt, MembershipProof, TreeConfig, TreeHead,
    TreeKind,
};

use crate::json::Json;

/// One fixed-depth tree of `typescript.json` and what zk-kit computed for it.
struct Spec<'a> {
    config: TreeConfig,
    zk: &'a serde_json::Value,
    implementation: String,
}

fn specs(typescript: &serde_json::Value) -> Result<Vec<Spec<'_>>> {
    let trees = typescript["imt"]
        .as_array()
        .context("typescript.json has no imt array")?;
    ensure!(!trees.is_empty(), "typescript.json's imt array is empty");
    trees
        .iter()
        .enumerate()
        .map(|(i, zk)| {
            let at = || format!("typescript.json imt[{i}]");
            let hash: HashKind = zk["hash"]
                .as_str()
                .with_context(at)?
                .parse()
                .map_err(anyhow::Error::msg)?;
            let arity = Arity::new(zk["arity"].as_u64().with_context(at)?)?;
            let depth = u32::try_from(zk["depth"].as_u64().with_context(at)?)?;
            let zero = parse_hash(zk["zero"].as_str().with_context(at)?)?;
            let config = TreeConfig::new(arity, hash).with_kind(TreeKind::Fixed { depth, zero });
            config.check()?;
            Ok(Spec {
                config,
                zk,
                implementation: zk["implementation"].as_str().with_context(at)?.to_owned(),
            })
        })
        .collect()
}

fn hex_of(value: &serde_json::Value, at: &str) -> Result<Hash> {
    Ok(parse_hash(
        value
            .as_str()
            .with_context(|| format!("{at}: not a string"))?,
    )?)
}

/// zk-kit's proof object, its values as the decimal strings cairn's
/// `to_zkkit_json` prints, for comparison.
fn zk_proof_as_decimal(proof: &serde_json::Value, at: &str) -> Result<serde_json::Value> {
    let dec = |v: &serde_json::Value| -> Result<serde_json::Value> {
        Ok(serde_json::Value::from(cairn_core::decimal::to_decimal(
            &hex_of(v, at)?,
        )))
    };
    let siblings = proof["siblings"]
        .as_array()
        .with_context(|| format!("{at}: siblings"))?
        .iter()
        .map(|level| {
            level
                .as_array()
                .with_context(|| format!("{at}: a siblings level"))?
                .iter()
                .map(dec)
                .collect::<Result<Vec<_>>>()
                .map(serde_json::Value::from)
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(serde_json::json!({
        "root": dec(&proof["root"])?,
        "leaf": dec(&proof["leaf"])?,
        "pathIndices": proof["pathIndices"].clone(),
        "siblings": siblings,
        "leafIndex": proof["leafIndex"].clone(),
    }))
}

fn proof_entry(binary: &[u8], json: &str) -> Result<Vec<(&'static str, Json)>> {
    Ok(vec![
        ("binary", Json::bytes(binary)),
        ("json", Json::parse(json)?),
    ])
}

fn tree_doc(spec: &Spec<'_>, leaves: &[Hash]) -> Result<(Json, usize, usize)> {
    let config = spec.config;
    let TreeKind::Fixed { depth, zero } = config.kind else {
        bail!("imt trees are fixed-depth")
    };
    let name = format!("{} arity {} depth {depth}", config.hash, config.arity);
    let zeros = config.kind.zeros(config.arity, config.hash);
    let zk_zeros: Vec<Hash> = spec.zk["zeros"]
        .as_array()
        .context("zeros")?
        .iter()
        .map(|z| hex_of(z, &name))
        .collect::<Result<_>>()?;
    ensure!(
        zk_zeros == zeros,
        "DISAGREEMENT: {name}: zk-kit's zeros differ from cairn's"
    );
    let capacity = config.capacity().context("a small tree")?;
    let max = capacity.min(leaves.len() as u64);
    let full = LeanImt::from_leaves(config, &leaves[..max as usize])?;
    let head = |size: u64| -> Result<TreeHead> { Ok(full.view(size)?.head()) };

    let mut roots = Vec::new();
    for entry in spec.zk["roots"].as_array().context("roots")? {
        let size = entry["size"].as_u64().context("size")?;
        let zk_root = hex_of(&entry["root"], &name)?;
        let fresh = LeanImt::from_leaves(config, &leaves[..size as usize])?.head();
        ensure!(
            fresh == head(size)?,
            "{name} size {size}: the historical head differs from a fresh tree's"
        );
        ensure!(
            fresh.root == Some(zk_root),
            "DISAGREEMENT: {name} size {size}: zk-kit's root is {}, cairn's {:?}",
            to_hex(&zk_root),
            fresh.root.map(|r| to_hex(&r))
        );
        roots.push(Json::obj([
            ("size", Json::from(size)),
            ("root", Json::hash(&zk_root)),
            (
                "agreed_with",
                Json::Arr(vec![Json::from(spec.implementation.as_str())]),
            ),
        ]));
    }

    let mut membership = Vec::new();
    for (i, zk) in spec.zk["proofs"]
        .as_array()
        .context("proofs")?
        .iter()
        .enumerate()
    {
        let at = format!("{name} proofs[{i}]");
        let size = zk["size"].as_u64().context("size")?;
        let index = zk["leafIndex"].as_u64().context("leafIndex")?;
        let proof = full.view(size)?.prove(index)?;
        let fresh = LeanImt::from_leaves(config, &leaves[..size as usize])?.prove(index)?;
        ensure!(
            proof == fresh,
            "{at}: the historical proof differs from a fresh tree's"
        );
        let trusted = head(size)?;
        proof
            .verify_with(&config, &trusted)
            .with_context(|| format!("{at}: cairn's proof does not verify"))?;
        ensure!(
            proof.verify(config.arity, config.hash, &trusted).is_err(),
            "{at}: a lean verifier accepted a fixed-depth proof"
        );
        let ours: serde_json::Value = serde_json::from_str(&proof.to_zkkit_json()?)?;
        ensure!(
            ours == zk_proof_as_decimal(zk, &at)?,
            "DISAGREEMENT: {at}: cairn's zkkit proof differs from zk-kit's createProof"
        );
        let (binary, json) = (proof.to_bytes(), proof.to_json());
        ensure!(
            MembershipProof::from_bytes(&binary)? == proof,
            "{at}: binary round trip"
        );
        ensure!(
            MembershipProof::from_json(&json)? == proof,
            "{at}: JSON round trip"
        );
        let mut fields = vec![
            ("index", Json::from(index)),
            ("size", Json::from(size)),
            ("root", Json::hash_or_null(trusted.root)),
        ];
        fields.extend(proof_entry(&binary, &json)?);
        fields.push((
            "agreed_with",
            Json::Arr(vec![Json::from(spec.implementation.as_str())]),
        ));
        membership.push(Json::obj(fields));
    }

    let n = config.arity.as_u64();
    let mut pairs = vec![
        (0, 0),
        (0, n + 1),
        (1, 1),
        (1, n + 1),
        (n + 1, max / 2 + 1),
        (max / 2 + 1, max),
        (max, max),
    ];
    pairs.retain(|&(old, new)| old <= new && new <= max);
    pairs.sort_unstable();
    pairs.dedup();
    let mut consistency = Vec::new();
    for &(old_size, new_size) in &pairs {
        let at = format!("{name} consistency {old_size} -> {new_size}");
        let proof = full.view(new_size)?.prove_consistency(old_size)?;
        let (old, new) = (head(old_size)?, head(new_size)?);
        proof
            .verify_with(&config, &old, &new)
            .with_context(|| format!("{at}: does not verify"))?;
        let (binary, json) = (proof.to_bytes(), proof.to_json());
        ensure!(
            ConsistencyProof::from_bytes(&binary)? == proof,
            "{at}: binary round trip"
        );
        ensure!(
            ConsistencyProof::from_json(&json)? == proof,
            "{at}: JSON round trip"
        );
        let mut fields = vec![
            ("old_size", Json::from(old_size)),
            ("old_root", Json::hash_or_null(old.root)),
            ("new_size", Json::from(new_size)),
            ("new_root", Json::hash_or_null(new.root)),
        ];
        fields.extend(proof_entry(&binary, &json)?);
        consistency.push(Json::obj(fields));
    }
    let counts = (membership.len(), consistency.len());
    Ok((
        Json::obj([
            ("hash", Json::from(config.hash.name())),
            ("arity", Json::from(config.arity.as_u64())),
            ("depth", Json::from(u64::from(depth))),
            ("zero", Json::hash(&zero)),
            ("zeros", Json::Arr(zeros.iter().map(Json::hash).collect())),
            ("roots", Json::Arr(roots)),
            ("membership", Json::Arr(membership)),
            ("consistency", Json::Arr(consistency)),
        ]),
        counts.0,
        counts.1,
    ))
}

/// What a verifier of a negative case trusts: the tree and its head(s).
enum Trusted {
    Membership(TreeConfig, TreeHead),
    Consistency(TreeConfig, TreeHead, TreeHead),
}

/// The trusted tree as the vectors write it.
fn config_json(config: &TreeConfig) -> Vec<(&'static str, Json)> {
    let mut fields = vec![
        ("hash", Json::from(config.hash.name())),
        ("arity", Json::from(config.arity.as_u64())),
        ("tree", Json::from(config.kind.name())),
    ];
    if let TreeKind::Fixed { depth, zero } = config.kind {
        fields.push(("depth", Json::from(u64::from(depth))));
        fields.push(("zero", Json::hash(&zero)));
    }
    fields
}

/// The name of an error's variant, from its `Debug` form.
fn variant<E: std::fmt::Debug>(error: &E) -> String {
    format!("{error:?}")
        .split(|c: char| !c.is_ascii_alphanumeric())
        .next()
        .unwrap_or_default()
        .to_owned()
}

/// Decodes and verifies a negative case: the stage and variant that reject it.
fn judge(
    trusted: &Trusted,
    binary: Option<&[u8]>,
    json: Option<&str>,
) -> Result<(), (String, String)> {
    let decode = |e: cairn_core::DecodeError| ("decode".to_owned(), variant(&e));
    let verify = |e: cairn_core::VerifyError| ("verify".to_owned(), variant(&e));
    match trusted {
        Trusted::Membership(config, head) => {
            let proof = match (binary, json) {
                (Some(b), _) => MembershipProof::from_bytes(b),
                (None, Some(j)) => MembershipProof::from_json(j),
                (None, None) => unreachable!("a case has an input"),
            }
            .map_err(decode)?;
            proof.verify_with(config, head).map_err(verify)
        }
        Trusted::Consistency(config, old, new) => {
            let proof = match (binary, json) {
                (Some(b), _) => ConsistencyProof::from_bytes(b),
                (None, Some(j)) => ConsistencyProof::from_json(j),
                (None, None) => unreachable!("a case has an input"),
            }
            .map_err(decode)?;
            proof.verify_with(config, old, new).map_err(verify)
        }
    }
}

fn with_byte(mut bytes: Vec<u8>, at: usize, value: u8) -> Vec<u8> {
    bytes[at] = value;
    bytes
}

fn invalid_cases(leaves: &[Hash]) -> Result<Vec<Json>> {
    let poseidon = TreeConfig::new(Arity::BINARY, HashKind::Poseidon).with_kind(TreeKind::Fixed {
        depth: 10,
        zero: [0; 32],
    });
    let lean = TreeConfig::new(Arity::BINARY, HashKind::Poseidon);
    let with_kind = |kind| TreeConfig { kind, ..poseidon };
    let mut tree = LeanImt::from_leaves(poseidon, &leaves[..5])?;
    let mut lean_tree = LeanImt::from_leaves(lean, &leaves[..5])?;
    let head = tree.head();
    // Leaf 4 of 5: its groups are partial from level 0 up, so every level pads.
    let proof = tree.prove(4)?;
    let bytes = proof.to_bytes();
    let json = proof.to_json();
    let consistency = tree.prove_consistency(0, 5)?;
    let deeper = with_kind(TreeKind::Fixed {
        depth: 11,
        zero: [0; 32],
    });
    let other_zero = with_kind(TreeKind::Fixed {
        depth: 10,
        zero: leaves[1099],
    });
    let mut relabelled_zero = bytes.clone();
    relabelled_zero[6..38].copy_from_slice(&leaves[1099]);
    let mut beyond = bytes.clone();
    beyond[46..54].copy_from_slice(&1025u64.to_be_bytes());
    let mut high_zero = bytes.clone();
    high_zero[6..38].copy_from_slice(&cairn_core::hash::BN254_MODULUS_BE);
    let members = |config| Trusted::Membership(config, head);
    type Case = (
        &'static str,
        Trusted,
        Option<Vec<u8>>,
        Option<String>,
        &'static str,
    );
    let cases: Vec<Case> = vec![
        (
            "imt-proof-for-lean-head",
            Trusted::Membership(lean, lean_tree.head()),
            Some(bytes.clone()),
            None,
            "verify",
        ),
        (
            "lean-proof-for-imt-head",
            members(poseidon),
            Some(lean_tree.prove(4)?.to_bytes()),
            None,
            "verify",
        ),
        (
            "imt-proof-for-deeper-imt",
            members(deeper),
            Some(bytes.clone()),
            None,
            "verify",
        ),
        (
            "imt-proof-for-another-zero",
            members(other_zero),
            Some(bytes.clone()),
            None,
            "verify",
        ),
        // The header relabelled to match the trusted tree: the root gives it away.
        (
            "relabelled-depth",
            members(deeper),
            Some(with_byte(bytes.clone(), 5, 11)),
            None,
            "verify",
        ),
        (
            "relabelled-zero",
            members(other_zero),
            Some(relabelled_zero),
            None,
            "verify",
        ),
        (
            "tree-kind-byte-lean",
            members(poseidon),
            Some(with_byte(bytes.clone(), 4, 0)),
            None,
            "decode",
        ),
        (
            "tree-kind-byte-reserved",
            members(poseidon),
            Some(with_byte(bytes.clone(), 4, 2)),
            None,
            "decode",
        ),
        (
            "depth-zero",
            members(poseidon),
            Some(with_byte(bytes.clone(), 5, 0)),
            None,
            "decode",
        ),
        (
            "depth-65",
            members(poseidon),
            Some(with_byte(bytes.clone(), 5, 65)),
            None,
            "decode",
        ),
        (
            "size-beyond-capacity",
            members(poseidon),
            Some(beyond),
            None,
            "decode",
        ),
        (
            "non-canonical-zero",
            members(poseidon),
            Some(high_zero),
            None,
            "decode",
        ),
        (
            "json-version-1-with-tree",
            members(poseidon),
            None,
            Some(json.replacen("\"version\": 2", "\"version\": 1", 1)),
            "decode",
        ),
        (
            "json-version-2-without-tree",
            members(poseidon),
            None,
            Some(
                lean_tree
                    .prove(4)?
                    .to_json()
                    .replacen("\"version\": 1", "\"version\": 2", 1),
            ),
            "decode",
        ),
        (
            "empty-head-without-root",
            Trusted::Consistency(poseidon, TreeHead::EMPTY, head),
            Some(consistency.to_bytes()),
            None,
            "verify",
        ),
        (
            "empty-head-with-the-zero-as-root",
            Trusted::Consistency(
                poseidon,
                TreeHead {
                    size: 0,
                    root: Some([0; 32]),
                },
                head,
            ),
            Some(consistency.to_bytes()),
            None,
            "verify",
        ),
    ];
    let mut out = Vec::with_capacity(cases.len());
    for (name, trusted, binary, json, expect) in cases {
        let (stage, reason) = match judge(&trusted, binary.as_deref(), json.as_deref()) {
            Ok(()) => bail!("imt case {name}: the mutated proof was ACCEPTED"),
            Err(rejection) => rejection,
        };
        ensure!(
            stage == expect,
            "imt case {name}: rejected at {stage} ({reason}), intended {expect}"
        );
        let (kind, config, trusted_json) = match trusted {
            Trusted::Membership(config, head) => (
                "membership",
                config,
                Json::obj([
                    ("size", Json::from(head.size)),
                    ("root", Json::hash_or_null(head.root)),
                ]),
            ),
            Trusted::Consistency(config, old, new) => (
                "consistency",
                config,
                Json::obj([
                    ("old_size", Json::from(old.size)),
                    ("old_root", Json::hash_or_null(old.root)),
                    ("new_size", Json::from(new.size)),
                    ("new_root", Json::hash_or_null(new.root)),
                ]),
            ),
        };
        let mut fields = vec![("name", Json::from(name)), ("kind", Json::from(kind))];
        fields.extend(config_json(&config));
        fields.push(("trusted", trusted_json));
        match (binary, json) {
            (Some(b), _) => fields.push(("binary", Json::bytes(&b))),
            (None, Some(j)) => fields.push(("json", Json::parse(&j)?)),
            (None, None) => unreachable!("a case has an input"),
        }
        fields.push(("error", Json::from(stage.as_str())));
        fields.push(("reason", Json::from(reason.as_str())));
        out.push(Json::obj(fields));
    }
    Ok(out)
}

/// Builds `imt.json`; returns it and a summary line.
pub fn build(typescript: &serde_json::Value, leaves: &[Hash]) -> Result<(Json, String)> {
    let specs = specs(typescript)?;
    let built = crate::par_map(&specs, |spec| tree_doc(spec, leaves));
    let mut trees = Vec::with_capacity(built.len());
    let (mut roots, mut membership, mut consistency) = (0, 0, 0);
    for (spec, result) in specs.iter().zip(built) {
        let (doc, m, c) = result?;
        roots += spec.zk["roots"].as_array().map_or(0, Vec::len);
        membership += m;
        consistency += c;
        trees.push(doc);
    }
    let invalid = invalid_cases(leaves)?;
    let summary = format!(
        "imt.json: {} fixed-depth trees, {roots} roots agreeing with @zk-kit/imt, {membership} membership proofs equal to its createProof, {consistency} consistency proofs, {} invalid cases",
        trees.len(),
        invalid.len()
    );
    Ok((
        Json::obj([
            (
                "description",
                Json::from(
                    "Fixed-depth, zero-padded trees (zk-kit's IMT): zero hashes, roots, membership and consistency proofs in cairn's encodings (format version 2), each tree one of typescript.json's imt trees and every root and membership proof agreeing with @zk-kit/imt; and proofs a verifier must reject, with the stage cairn rejects them at. See README.md.",
                ),
            ),
            (
                "generator",
                Json::from("crates/vectors (cargo run -p cairn-vectors -- generate)"),
            ),
            ("leaves", Json::from("leaves.json")),
            ("format_version", Json::from(2u64)),
            ("trees", Json::Arr(trees)),
            ("invalid", Json::Arr(invalid)),
        ]),
        summary,
    ))
}
