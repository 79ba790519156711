//! `cairn publish`: write a database's tiles and checkpoint to a directory
//! any static HTTP server or CDN can serve, or to S3-compatible object
//! storage.

use std::path::PathBuf;

use anyhow::anyhow;
use cairn_tiles::{Location, PublishOptions, RemoteOptions, TileSink, TileSource, publish_with};

use crate::commands::forest_tiles;
use crate::database::{self, Options};
use crate::failure::{Code, Failure};
use crate::json::Object;
use crate::output;
use crate::units::group;

/// The long help of the command.
pub(crate) const LONG_ABOUT: &str = "\
Publish the cairn database DIR as immutable tiles to --to: a directory (a path or file://PATH) \
or S3-compatible object storage (s3://BUCKET/PREFIX): the tree's final nodes cut into objects of \
at most 256 nodes (tile/L/N for full tiles, tile/L/N.p/W for partial ones) and, last, once every \
tile it names is written, a checkpoint object naming the head they belong to. Publishing resumes \
from the store's checkpoint: only the tiles added since are written, so publishing again after \
more leaves writes what changed. Serve the directory or bucket with any static HTTP server or \
CDN: every tile can be cached forever, only `checkpoint` changes. `cairn prove --tiles` computes \
proofs from it, `cairn mirror --from` copies it.

S3: credentials and region come from AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY (and a temporary \
credential's token) and AWS_REGION (default us-east-1); --s3-endpoint URL names an S3-compatible server (addressed \
path-style). A failed request is retried with exponential backoff (--retries, --retry-seconds); \
a publication that still fails exits 4 naming the object, and the store's old checkpoint stands.

Signed checkpoints: with a signer key (--sign-key FILE, else DIR/signer.key if the database has \
one, see `cairn sign-key`) the checkpoint object is the database's signed checkpoint, the C2SP \
signed note GET /v1/checkpoint serves, which `cairn mirror --verify-key` and `cairn prove --tiles \
--verify-key` check; without one it is five unsigned lines, trusted as far as the place serving \
it. A store whose checkpoint is signed is never given an unsigned one (exit 2). The empty tree \
has no signed checkpoint: a signed publication of it writes nothing.

Before its checkpoint is written, the published size is made final in DIR (as `cairn finalize` \
does): `cairn truncate` below it is then refused, so the database never contradicts what the \
store says. A store published from a tree that was rolled back below its checkpoint (a copy \
restored from an older backup), or from another tree, is refused (exit 2): published tiles never \
change. Chain followers publish finalized sizes (--finalized).

--json prints {\"size\":S,\"root\":\"0x..\"|null,\"objects\":O,\"bytes\":B,\"skipped\":K,\
\"signed_by\":\"name+id\"|null}.

Examples:
  cairn publish db --to public
  cairn publish db --to file://public --json
  cairn publish db --to s3://tiles/nullifiers --s3-endpoint http://127.0.0.1:9000
  cairn keygen --name example.org/db --out db.key && cairn publish db --to public --sign-key db.key";

/// Publish a database's tiles to a directory.
#[derive(clap::Args, Debug)]
pub struct PublishCmd {
    /// The database directory.
    #[arg(value_name = "DIR")]
    dir: PathBuf,
    /// Where to publish: a directory, file://DIRECTORY or s3://BUCKET/PREFIX.
    #[arg(long, value_name = "DEST")]
    to: String,
    /// How remote stores are reached.
    #[command(flatten)]
    remote: RemoteArgs,
    /// Publish the finalized size only (what a rollback can never undo).
    #[arg(long)]
    finalized: bool,
    /// Sign the checkpoint with this signer key file (default: DIR/signer.key, if the database has one).
    #[arg(long, value_name = "FILE")]
    sign_key: Option<PathBuf>,
    /// Of a database of several trees: publish only this tree, as a store of one tree.
    #[arg(long, value_name = "NAME")]
    tree: Option<String>,
    /// Print the result as one line of JSON.
    #[arg(long)]
    json: bool,
}

/// The options of commands that reach a remote tile store.
#[derive(clap::Args, Debug, Clone, Default)]
pub(crate) struct RemoteArgs {
    /// The endpoint of an S3-compatible server (http://HOST:PORT), for s3:// stores.
    #[arg(long, value_name = "URL")]
    pub(crate) s3_endpoint: Option<String>,
    /// Retries of a failed request to a remote store (with exponential backoff).
    #[arg(long, value_name = "N", default_value_t = 10)]
    pub(crate) retries: usize,
    /// Seconds after a request's first try within which it is retried.
    #[arg(long, value_name = "SECONDS", default_value_t = 180)]
    pub(crate) retry_seconds: u64,
}

impl RemoteArgs {
    pub(crate) fn options(&self) -> RemoteOptions {
        RemoteOptions {
            s3_endpoint: self.s3_endpoint.clone(),
            max_retries: self.retries,
            retry_timeout: std::time::Duration::from_secs(self.retry_seconds),
            ..RemoteOptions::default()
        }
    }
}

/// The location a `--to`/`--tiles`/`--from` argument names (exit 2 if it
/// names none).
pub(crate) fn location(text: &str) -> Result<Location, Failure> {
    Location::parse(text).map_err(|why| Failure::new(Code::Usage, anyhow!("{why}")))
}

/// The store to publish to.
pub(crate) fn open_sink(text: &str, remote: &RemoteArgs) -> Result<Box<dyn TileSink>, Failure> {
    cairn_tiles::open_sink(&location(text)?, &remote.options())
        .map_err(|why| Failure::new(Code::Usage, anyhow!("{why}")))
}

/// The store to read tiles from.
pub(crate) fn open_source(text: &str, remote: &RemoteArgs) -> Result<Box<dyn TileSource>, Failure> {
    cairn_tiles::open_source(&location(text)?, &remote.options())
        .map_err(|why| Failure::new(Code::Usage, anyhow!("{why}")))
}

impl PublishCmd {
    pub(crate) fn run(self) -> Result<(), Failure> {
        let to = open_sink(&self.to, &self.remote)?;
        let signer = match &self.sign_key {
            Some(path) => Some(crate::signing::read_key(path)?),
            None => {
                let own = crate::signing::database_key_path(&self.dir);
                own.exists()
                    .then(|| crate::signing::read_key(&own))
                    .transpose()?
            }
        };
        if cairn_db::is_forest(&self.dir) {
            return self.run_forest(&*to, signer.as_ref());
        }
        if let Some(tree) = self
            .tree
            .as_deref()
            .filter(|t| *t != cairn_db::DEFAULT_TREE)
        {
            return Err(Failure::new(
                Code::Usage,
                anyhow!(
                    "--tree {tree}: {} holds one tree, named {}",
                    self.dir.display(),
                    cairn_db::DEFAULT_TREE
                ),
            ));
        }
        let db = database::open(&self.dir, Options::default())?;
        let tree = db.tree_snapshot().map_err(database::db_failure)?;
        let size = if self.finalized {
            db.finalized_size()
        } else {
            tree.size()
        };
        // The database is this command's alone: its tree cannot move
        // between the snapshot and the finalize.
        let pin = |head: &cairn_core::TreeHead| {
            db.pin_published(head).map_err(|e| {
                format!(
                    "making the first {} leaves final before publishing them: {e}",
                    head.size
                )
                .into()
            })
        };
        let options = PublishOptions {
            signer: signer.as_ref(),
            before_checkpoint: Some(&pin),
        };
        let published = self.publish(&tree, size, &*to, &options);
        db.close().map_err(database::db_failure)?;
        let (published, head) = published?;
        let signed_by = signer
            .as_ref()
            .filter(|_| head.root.is_some())
            .map(|s| format!("{}+{:08x}", s.name(), s.id()));
        if self.json {
            return output::line(
                &Object::new()
                    .field("size", head.size)
                    .hash("root", head.root.as_ref())
                    .field("objects", published.objects)
                    .field("bytes", published.bytes)
                    .field("skipped", published.skipped)
                    .field("signed_by", signed_by)
                    .finish(),
            );
        }
        if signer.is_some() && head.root.is_none() {
            return output::line(&format!(
                "published nothing to {}: the tree is empty, and cairn's empty tree has no root to sign",
                to.location()
            ));
        }
        output::line(&format!(
            "published {} objects ({} bytes) to {}: size {}, root {}{}",
            group(published.objects),
            group(published.bytes),
            to.location(),
            head.size,
            head.root
                .map_or_else(|| "none".to_owned(), |r| cairn_core::hex::to_hex(&r)),
            signed_by.map_or_else(String::new, |key| format!(", signed by {key}"))
        ))
    }

    /// A database of several trees: every tree and the forest checkpoint,
    /// or the one tree --tree names as a store of one tree.
    fn run_forest(
        &self,
        to: &dyn TileSink,
        signer: Option<&cairn_note::Signer>,
    ) -> Result<(), Failure> {
        let signed_by = signer.map(|s| format!("{}+{:08x}", s.name(), s.id()));
        if let Some(name) = &self.tree {
            let (published, head) =
                forest_tiles::publish_one_tree(&self.dir, name, to, signer, self.finalized)?;
            let signed_by = signed_by.filter(|_| head.root.is_some());
            if self.json {
                return output::line(
                    &Object::new()
                        .field("tree", name.as_str())
                        .field("size", head.size)
                        .hash("root", head.root.as_ref())
                        .field("objects", published.objects)
                        .field("bytes", published.bytes)
                        .field("skipped", published.skipped)
                        .field("signed_by", signed_by)
                        .finish(),
                );
            }
            return output::line(&format!(
                "published tree {name}: {} objects ({} bytes) to {}: size {}, root {}{}",
                group(published.objects),
                group(published.bytes),
                to.location(),
                head.size,
                head.root
                    .map_or_else(|| "none".to_owned(), |r| cairn_core::hex::to_hex(&r)),
                signed_by.map_or_else(String::new, |key| format!(", signed by {key}"))
            ));
        }
        let done = forest_tiles::publish_forest(&self.dir, to, signer, self.finalized)?;
        if self.json {
            let trees: Vec<String> = done
                .entries
                .entries()
                .iter()
                .map(|e| {
                    Object::new()
                        .field("tree", e.name.as_str())
                        .field("kind", e.tree.kind.name())
                        .field("size", e.head.size)
                        .hash("root", e.head.root.as_ref())
                        .finish()
                })
                .collect();
            return output::line(
                &Object::new()
                    .field("block", done.block.number)
                    .hash("block_hash", Some(&done.block.hash))
                    .hash("root", Some(&done.head.root))
                    .raw("trees", &format!("[{}]", trees.join(",")))
                    .field("objects", done.objects)
                    .field("bytes", done.bytes)
                    .field("skipped", done.skipped)
                    .field("signed_by", signed_by)
                    .finish(),
            );
        }
        output::line(&format!(
            "published {} trees at block {} to {}: {} objects ({} bytes), root of roots {}{}",
            done.head.trees,
            done.block.number,
            to.location(),
            group(done.objects),
            group(done.bytes),
            cairn_core::hex::to_hex(&done.head.root),
            signed_by.map_or_else(String::new, |key| format!(", signed by {key}"))
        ))?;
        for e in done.entries.entries() {
            output::line(&format!(
                "  {} ({}): size {}, root {}",
                e.name,
                e.tree.kind.name(),
                e.head.size,
                e.head
                    .root
                    .map_or_else(|| "none".to_owned(), |r| cairn_core::hex::to_hex(&r))
            ))?;
        }
        Ok(())
    }

    fn publish(
        &self,
        snapshot: &cairn_core::Snapshot,
        size: u64,
        to: &dyn TileSink,
        options: &PublishOptions<'_>,
    ) -> Result<(cairn_tiles::Published, cairn_core::TreeHead), Failure> {
        let head = snapshot
            .view(size)
            .map_err(|e| Failure::new(Code::Input, e))?
            .head();
        match publish_with(snapshot, size, to, options) {
            Ok(done) => Ok((done, head)),
            Err(cairn_tiles::PublishError::Foreign(why)) => Err(Failure::new(
                Code::Usage,
                anyhow!("{}: {why}", to.location()),
            )),
            Err(error @ cairn_tiles::PublishError::WouldUnsign { .. }) => Err(Failure::new(
                Code::Usage,
                anyhow!(
                    "{}: {error} (--sign-key FILE, or `cairn sign-key DIR FILE`)",
                    to.location()
                ),
            )),
            Err(error @ cairn_tiles::PublishError::Indexed) => {
                Err(Failure::new(Code::Usage, error))
            }
            Err(error) => Err(Failure::new(Code::Input, error)),
        }
    }
}
