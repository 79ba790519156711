//! The `checkpoint` file (docs/file-format.md, "Checkpoint"). Version 3
//! adds what verification needs: the chain value the first frame after the
//! checkpoint carries, and per level the CRC of the partial last page of
//! nodes that no sums file holds yet. Versions 1 and 2 are still read.

use cairn_core::Hash;
use cairn_core::cast::level_number;

use super::bytes::{array, u32_at, u64_at};
use super::{LogPosition, MAX_LEVELS, Malformed};

pub(crate) const CHECKPOINT_MAGIC: &[u8; 8] = b"CAIRNCKP";
/// The checkpoint's own version: 2 added finality, the rollback epoch and
/// the count of block-tagged heads; 3 the log chain value and the partial
/// pages' CRCs. Versions 1 and 2 are still read.
pub const CHECKPOINT_VERSION: u32 = 3;
/// Bytes of the fixed part, by version.
const FIXED_V1: usize = 64;
const FIXED_V2: usize = 96;
const FIXED_V3: usize = 104;
/// Bytes per level, by version.
const LEVEL_V2: usize = 40;
const LEVEL_V3: usize = 48;

/// A published checkpoint.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CheckpointMeta {
    /// 1, 2, ... (0: the empty checkpoint a store is created with).
    pub number: u64,
    /// Leaves covered.
    pub size: u64,
    /// Where the log continues: file, slot and sequence number of the first
    /// frame after the checkpoint.
    pub resume: LogPosition,
    /// Per level: (final nodes stored, the level's last node).
    pub levels: Vec<(u64, Hash)>,
    /// Leaves below which a rollback is refused (at most `size`).
    pub finalized: u64,
    /// Rollbacks published so far: head records of an older epoch past
    /// `heads` are leftovers of a rollback.
    pub epoch: u64,
    /// Block-tagged head records valid at this checkpoint (all at sizes
    /// at most `size`).
    pub heads: u64,
    /// The lowest size rolled back to since the layer above last cleared
    /// it ([`crate::RollbackFloor::clear`]), `u64::MAX` for none:
    /// derived files written before (the database's set) hold nothing
    /// valid at or above it.
    pub rollback_floor: u64,
    /// What verification needs (version 3); `None` for a checkpoint of an
    /// older version, whose levels have no sums files.
    pub integrity: Option<Integrity>,
}

/// The parts of a version 3 checkpoint that let open verify what it reads.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Integrity {
    /// The value the `prev` field of the first frame after the checkpoint
    /// holds (the frames after it chain from there).
    pub chain: u32,
    /// Per level, the CRC-32C of its final nodes past the last whole page
    /// (nodes `128 * floor(final_len / 128) .. final_len`; 0 when there
    /// are none): the sums file holds the whole pages.
    pub partial_pages: Vec<u32>,
}

fn le<const N: usize>(b: &[u8], at: usize) -> Option<[u8; N]> {
    b.get(at..at.checked_add(N)?)?.try_into().ok()
}

fn u64_le(b: &[u8], at: usize) -> Option<u64> {
    le::<8>(b, at).map(u64::from_le_bytes)
}

fn u32_le(b: &[u8], at: usize) -> Option<u32> {
    le::<4>(b, at).map(u32::from_le_bytes)
}

impl CheckpointMeta {
    /// The encoding: version 3 when it carries [`Integrity`], version 2
    /// otherwise (what an older checkpoint converts to).
    pub(crate) fn encode(&self, store_id: u64) -> Vec<u8> {
        let (version, level_len) = match &self.integrity {
            Some(_) => (CHECKPOINT_VERSION, LEVEL_V3),
            None => (2, LEVEL_V2),
        };
        let mut b = Vec::with_capacity(FIXED_V3 + 4 + level_len * self.levels.len());
        b.extend_from_slice(CHECKPOINT_MAGIC);
        b.extend_from_slice(&version.to_le_bytes());
        b.extend_from_slice(&level_number(self.levels.len()).to_le_bytes());
        b.extend_from_slice(&store_id.to_le_bytes());
        b.extend_from_slice(&self.number.to_le_bytes());
        b.extend_from_slice(&self.size.to_le_bytes());
        b.extend_from_slice(&self.resume.file.to_le_bytes());
        b.extend_from_slice(&self.resume.slot.to_le_bytes());
        b.extend_from_slice(&self.resume.seq.to_le_bytes());
        b.extend_from_slice(&self.finalized.to_le_bytes());
        b.extend_from_slice(&self.epoch.to_le_bytes());
        b.extend_from_slice(&self.heads.to_le_bytes());
        b.extend_from_slice(&self.rollback_floor.to_le_bytes());
        debug_assert_eq!(b.len(), FIXED_V2);
        if let Some(integrity) = &self.integrity {
            b.extend_from_slice(&integrity.chain.to_le_bytes());
            b.extend_from_slice(&[0; 4]);
        }
        for (level, (final_len, last)) in self.levels.iter().enumerate() {
            b.extend_from_slice(&final_len.to_le_bytes());
            b.extend_from_slice(last);
            if let Some(integrity) = &self.integrity {
                let crc = integrity.partial_pages.get(level).copied().unwrap_or(0);
                b.extend_from_slice(&crc.to_le_bytes());
                b.extend_from_slice(&[0; 4]);
            }
        }
        let crc = crc32c::crc32c(&b);
        b.extend_from_slice(&crc.to_le_bytes());
        b
    }

    /// The longest valid encoding ([`MAX_LEVELS`] levels).
    pub(crate) const MAX_LEN: usize = FIXED_V3 + 4 + LEVEL_V3 * MAX_LEVELS;

    pub(crate) fn decode(b: &[u8], store_id: u64) -> Result<CheckpointMeta, Malformed> {
        let Some(head) = b.first_chunk::<{ FIXED_V1 + 4 }>() else {
            return Err(Malformed::Field(format!(
                "{} bytes, want at least {}",
                b.len(),
                FIXED_V1 + 4
            )));
        };
        if array::<0, 8, { FIXED_V1 + 4 }>(head) != *CHECKPOINT_MAGIC {
            return Err(Malformed::Magic);
        }
        let version = u32_at::<8, { FIXED_V1 + 4 }>(head);
        // Version 1 had no finality, epoch or heads; version 2 no chain
        // value or partial pages.
        let (fixed, level_len) = match version {
            1 => (FIXED_V1, LEVEL_V2),
            2 => (FIXED_V2, LEVEL_V2),
            CHECKPOINT_VERSION => (FIXED_V3, LEVEL_V3),
            other => return Err(Malformed::Version(other)),
        };
        let levels = u32_at::<12, { FIXED_V1 + 4 }>(head) as usize;
        if levels > MAX_LEVELS {
            return Err(Malformed::Field(format!(
                "{levels} levels, want at most {MAX_LEVELS}"
            )));
        }
        let want = fixed + 4 + level_len * levels;
        if b.len() != want {
            return Err(Malformed::Field(format!(
                "{} bytes, want {want} for {levels} levels",
                b.len()
            )));
        }
        let body = b.get(..want - 4).unwrap_or_default();
        if u32_le(b, want - 4) != Some(crc32c::crc32c(body)) {
            return Err(Malformed::Crc);
        }
        let field = |at: usize| u64_le(b, at).unwrap_or_default();
        if u64_at::<16, { FIXED_V1 + 4 }>(head) != store_id {
            return Err(Malformed::Field(format!(
                "checkpoint of store {:#x}, want {store_id:#x}",
                u64_at::<16, { FIXED_V1 + 4 }>(head)
            )));
        }
        let mut nodes = Vec::with_capacity(levels);
        let mut partial_pages = Vec::with_capacity(levels);
        for level in 0..levels {
            let at = fixed + level_len * level;
            let last: Hash = le::<32>(b, at + 8).unwrap_or_default();
            nodes.push((field(at), last));
            if version == CHECKPOINT_VERSION {
                partial_pages.push(u32_le(b, at + 40).unwrap_or_default());
                if u32_le(b, at + 44) != Some(0) {
                    return Err(Malformed::Field(format!(
                        "level {level}: reserved bytes are not zero"
                    )));
                }
            }
        }
        let size = field(32);
        let (finalized, epoch, heads, rollback_floor) = if version == 1 {
            // A version 1 store finalised everything it checkpointed.
            (size, 0, 0, u64::MAX)
        } else {
            (field(64), field(72), field(80), field(88))
        };
        if finalized > size {
            return Err(Malformed::Field(format!(
                "finalized size {finalized} above the checkpoint's size {size}"
            )));
        }
        let integrity = if version == CHECKPOINT_VERSION {
            if u32_le(b, 100) != Some(0) {
                return Err(Malformed::Field("reserved bytes are not zero".to_owned()));
            }
            Some(Integrity {
                chain: u32_le(b, 96).unwrap_or_default(),
                partial_pages,
            })
        } else {
            None
        };
        Ok(CheckpointMeta {
            number: field(24),
            size,
            resume: LogPosition {
                file: field(40),
                slot: field(48),
                seq: field(56),
            },
            levels: nodes,
            finalized,
            epoch,
            heads,
            rollback_floor,
            integrity,
        })
    }
}

/// The version field of checkpoint bytes that decoded.
pub(crate) fn checkpoint_version(bytes: &[u8]) -> u32 {
    u32_le(bytes, 8).unwrap_or_default()
}

#[cfg(test)]
#[allow(clippy::indexing_slicing, clippy::unwrap_used)]
mod tests {
    use super::*;

    fn checkpoint() -> CheckpointMeta {
        CheckpointMeta {
            number: 3,
            size: 1000,
            resume: LogPosition {
                file: 0,
                slot: 5,
                seq: 6,
            },
            levels: vec![(999, [1; 32]), (249, [2; 32]), (62, [3; 32]), (0, [4; 32])],
            finalized: 900,
            epoch: 2,
            heads: 17,
            rollback_floor: 950,
            integrity: Some(Integrity {
                chain: 0xabcd,
                partial_pages: vec![11, 12, 13, 0],
            }),
        }
    }

    #[test]
    fn checkpoints_round_trip_and_every_bit_flip_is_caught() {
        let ckpt = checkpoint();
        let cb = ckpt.encode(7);
        assert_eq!(cb.len(), FIXED_V3 + 4 + LEVEL_V3 * 4);
        assert_eq!(CheckpointMeta::decode(&cb, 7), Ok(ckpt.clone()));
        assert!(CheckpointMeta::decode(&cb, 1).is_err(), "another store's");
        assert!(CheckpointMeta::decode(&cb[..cb.len() - 1], 7).is_err());
        for bit in 0..cb.len() * 8 {
            let mut bad = cb.clone();
            bad[bit / 8] ^= 1 << (bit % 8);
            assert!(
                CheckpointMeta::decode(&bad, 7).is_err(),
                "checkpoint bit {bit}"
            );
        }
    }

    #[test]
    fn older_versions_still_read() {
        let ckpt = checkpoint();
        // Version 2: the same without the chain and partial pages.
        let v2 = CheckpointMeta {
            integrity: None,
            ..ckpt.clone()
        };
        let v2_bytes = v2.encode(7);
        assert_eq!(checkpoint_version(&v2_bytes), 2);
        assert_eq!(v2_bytes.len(), FIXED_V2 + 4 + LEVEL_V2 * 4);
        assert_eq!(CheckpointMeta::decode(&v2_bytes, 7), Ok(v2));
        // Version 1: no finality, epoch or heads; finalized at its size.
        let mut v1 = v2_bytes[..FIXED_V1].to_vec();
        v1[8..12].copy_from_slice(&1u32.to_le_bytes());
        v1.extend_from_slice(&v2_bytes[FIXED_V2..v2_bytes.len() - 4]);
        let crc = crc32c::crc32c(&v1);
        v1.extend_from_slice(&crc.to_le_bytes());
        let read = CheckpointMeta::decode(&v1, 7).unwrap();
        assert_eq!(
            (read.finalized, read.epoch, read.heads, read.rollback_floor),
            (1000, 0, 0, u64::MAX)
        );
        assert_eq!((read.levels, read.integrity), (ckpt.levels, None));
    }
}
