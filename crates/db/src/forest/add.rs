//! Trees added to a database: a tree of any kind (or a family's member 0)
//! by [`Forest::add_tree_with`], a family's later members by a rollover,
//! and the conversion of a single-tree directory on its first added tree.
//! A tree's directory is durable before the manifest names it.

use std::collections::BTreeSet;
use std::sync::Arc;

use cairn_store::StoreError;

use super::files::{open_writer, quiet, write_journal, write_manifest};
use super::journal::Header;
use super::manifest::{self, Entry, Family};
use super::{
    Capacity, DEFAULT_TREE, Forest, ForestError, State, TREES_DIR, Tree, check_failure, check_name,
    family, member_name,
};
use crate::config::DbConfig;
use crate::database::Database;
use crate::error::{DbError, Result};

impl Forest {
    /// Adds a tree named `name` of `config` (any kind, arity, hash, set)
    /// in `trees/NAME`, and returns it. A tree of a database of several
    /// trees finalizes only explicitly (by block: [`Forest::finalize_to_block`]).
    /// Adding a tree to a single-tree directory makes it a database of
    /// several, its tree named [`DEFAULT_TREE`].
    pub fn add_tree(&self, name: &str, config: DbConfig) -> Result<Arc<Database>> {
        self.add_tree_with(name, config, None)
    }

    /// [`Forest::add_tree`] of a tree that holds at most `capacity`
    /// leaves: full, it refuses more, or (with a rollover) its next
    /// values go to a new member `NAME/1`, `NAME/2`, ... of the same
    /// config, made in the block that needs it (see [`Capacity`]).
    pub fn add_tree_with(
        &self,
        name: &str,
        config: DbConfig,
        capacity: Option<Capacity>,
    ) -> Result<Arc<Database>> {
        check_name(name)?;
        // A tree's writes are journaled as appends by block; a mutable
        // tree's updates and removals have no journal frame.
        if config.mutable.is_some() {
            return Err(DbError::ConfigMismatch {
                field: "mutability",
                stored: "a database of several trees, whose trees are append-only".to_owned(),
                given: "a mutable tree".to_owned(),
            });
        }
        let mut state = self.state.lock();
        check_failure(&state)?;
        if self
            .trees
            .read()
            .iter()
            .any(|t| t.name == name || t.family_name() == name)
        {
            return Err(ForestError::TreeExists {
                name: name.to_owned(),
            }
            .into());
        }
        let family = match capacity {
            Some(capacity) => Some(family::check_capacity(name, &config, capacity)?),
            None => None,
        };
        if state.journal.is_none() {
            self.convert(&mut state)?;
        }
        self.create_member(&mut state, name, config, family)
    }

    /// Makes member `family.member` of `name` (or the plain tree `name`):
    /// its directory, then the manifest naming it. A member made for a
    /// block the journal never holds stays an empty member, which the
    /// family's next rollover reuses.
    pub(super) fn create_member(
        &self,
        state: &mut State,
        name: &str,
        config: DbConfig,
        family: Option<Family>,
    ) -> Result<Arc<Database>> {
        let trees_dir = self.dir.join(TREES_DIR);
        if !self
            .fs
            .exists(&trees_dir)
            .map_err(|e| StoreError::io("stat", &trees_dir, e))?
        {
            self.fs
                .create_dir(&trees_dir)
                .map_err(|e| StoreError::io("mkdir", &trees_dir, e))?;
        }
        let member = family.map_or(0, |f| f.member);
        let mut relative = manifest::member_dir(TREES_DIR, name, member);
        // A directory the manifest does not name is what a crash left of
        // an earlier attempt: the tree goes beside it (`~1`, `~2`, ...).
        let mut attempt = 0;
        while self
            .fs
            .exists(&self.dir.join(&relative))
            .map_err(|e| StoreError::io("stat", self.dir.join(&relative), e))?
        {
            attempt += 1;
            relative = format!(
                "{}~{attempt}",
                manifest::member_dir(TREES_DIR, name, member)
            );
        }
        let tree_dir = self.dir.join(&relative);
        let mut config = config;
        config.explicit_finality = true;
        // An empty tree is its directory and `cairn.meta` until its first
        // write: a database of many trees pays little for the idle ones.
        config.store.flags |= cairn_store::FLAG_LAZY_FILES;
        quiet(&mut config);
        let db = Arc::new(Database::create_in(
            Arc::clone(&self.fs),
            &tree_dir,
            config,
        )?);
        self.fs
            .sync_dir(&trees_dir)
            .map_err(|e| StoreError::io("fsync", &trees_dir, e))?;
        let mut entries = self.entries();
        entries.push(Entry {
            name: name.to_owned(),
            dir: relative,
            family,
        });
        // The manifest names the tree once its directory is durable.
        write_manifest(&*self.fs, &self.dir, &entries)?;
        let number = u32::try_from(state.journaled.len()).expect("at most MAX_TREES trees");
        state.journaled.push(db.size());
        state.dirty.insert(number);
        self.trees.write().push(Tree {
            name: member_name(name, member),
            db: Arc::clone(&db),
            family,
        });
        Ok(db)
    }

    fn entries(&self) -> Vec<Entry> {
        self.trees
            .read()
            .iter()
            .map(|t| Entry {
                name: t.family_name().to_owned(),
                family: t.family,
                dir: match t.db.dir().strip_prefix(&self.dir) {
                    Ok(relative) if relative.as_os_str().is_empty() => ".".to_owned(),
                    Ok(relative) => relative.to_string_lossy().into_owned(),
                    Err(_) => ".".to_owned(),
                },
            })
            .collect()
    }

    /// Makes a single-tree directory a database of several trees: its
    /// tree made durable, a journal holding it as the base, then the
    /// manifest (the switch: a crash before it leaves the old layout, and
    /// the journal is written afresh next time).
    fn convert(&self, state: &mut State) -> Result<()> {
        let tree = self.default_tree()?;
        tree.flush()?;
        let size = tree.durable_size();
        let header = Header {
            first_seq: 1,
            base: vec![size],
            finalized: None,
            blocks: Vec::new(),
        };
        write_journal(&*self.fs, &self.dir, &header)?;
        write_manifest(
            &*self.fs,
            &self.dir,
            &[Entry {
                name: DEFAULT_TREE.to_owned(),
                dir: ".".to_owned(),
                family: None,
            }],
        )?;
        state.journal = Some(open_writer(&*self.fs, &self.dir)?);
        state.journaled = vec![size];
        state.dirty = BTreeSet::from([0]);
        self.start_applier();
        Ok(())
    }
}
