//! The slice of the Solidity ABI a follower needs: an event signature as a
//! contract declares it (`Deposit(bytes32 indexed commitment, uint32
//! leafIndex, uint256 timestamp)`), its topic, where one named field sits
//! in a log (a topic when indexed, a head word or a dynamic array of words
//! in the data otherwise), and a view call's calldata (selector and 32-byte
//! words). Everything read from a log is checked against the layout the
//! signature gives: a short or inconsistent log is an error naming what it
//! lacks, never a panic.
#![deny(clippy::indexing_slicing, clippy::unwrap_used)]

use sha3::{Digest, Keccak256};

/// A 32-byte ABI word.
pub type Word = [u8; 32];

/// Why an event signature, a call or a log does not fit.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum AbiError {
    /// The signature does not parse.
    #[error("event signature {signature:?}: {reason}")]
    Signature {
        /// The signature as given.
        signature: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The field named is not a parameter of the event.
    #[error("event {event} has no parameter named {field:?} (it has {names})")]
    NoSuchField {
        /// The event's name.
        event: String,
        /// The field asked for.
        field: String,
        /// The parameters' names, comma-separated.
        names: String,
    },
    /// The field's type cannot be a leaf.
    #[error(
        "parameter {field} of {event} is {ty}: a leaf must be one 32-byte word (bytes32, uintN, intN, address) or an array of them, and an indexed one a value type"
    )]
    FieldType {
        /// The event's name.
        event: String,
        /// The field.
        field: String,
        /// Its type.
        ty: String,
    },
    /// A log lacks a topic the signature says it has.
    #[error("log has {got} topics, event {event} needs {want}")]
    Topics {
        /// The event's name.
        event: String,
        /// Topics in the log.
        got: usize,
        /// Topics the event has.
        want: usize,
    },
    /// A log's data is shorter than its layout needs.
    #[error("log data of {got} bytes, event {event} needs {want} to read {field}")]
    Data {
        /// The event's name.
        event: String,
        /// The field being read.
        field: String,
        /// Bytes in the data.
        got: usize,
        /// Bytes the read needs.
        want: usize,
    },
    /// An offset or length word does not fit in memory.
    #[error("log data of event {event}: {what} word {value} is out of range")]
    OutOfRange {
        /// The event's name.
        event: String,
        /// Which word (offset or length).
        what: &'static str,
        /// Its value, hex.
        value: String,
    },
    /// A filter names no indexed value parameter of the event.
    #[error(
        "event {event} has no indexed value parameter named {name:?} to filter on (indexed value parameters: {names})"
    )]
    NoSuchFilter {
        /// The event's name.
        event: String,
        /// The parameter asked for.
        name: String,
        /// The indexed value parameters' names, comma-separated.
        names: String,
    },
    /// A call's signature or arguments do not parse.
    #[error("call {call:?}: {reason}")]
    Call {
        /// The call as given.
        call: String,
        /// What is wrong with it.
        reason: String,
    },
}

/// An ABI type, as far as the layout of an event needs it.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Type {
    /// A value type: one word (uintN, intN, bytesN, address, bool).
    Word(String),
    /// `T[k]` of value types: k words in place.
    Fixed(String, usize),
    /// `T[]` of value types: an offset word, then a length and the words.
    Array(String),
    /// Anything else dynamic (bytes, string, arrays of those, tuples):
    /// an offset word; never a leaf.
    Dynamic(String),
}

impl Type {
    fn parse(text: &str) -> Result<Type, String> {
        if text.starts_with('(') || text.starts_with("tuple") {
            return Err(format!("tuple type {text} is not supported"));
        }
        if let Some(inner) = text.strip_suffix("[]") {
            return Ok(if is_value_type(inner) {
                Type::Array(text.to_owned())
            } else {
                check_elementary(inner)?;
                Type::Dynamic(text.to_owned())
            });
        }
        if let Some((inner, count)) = text.strip_suffix(']').and_then(|t| t.rsplit_once('[')) {
            let count: usize = count
                .parse()
                .map_err(|_| format!("array length in {text} is not a number"))?;
            if !is_value_type(inner) {
                return Err(format!(
                    "fixed array {text} of a dynamic type is not supported"
                ));
            }
            return Ok(Type::Fixed(text.to_owned(), count));
        }
        check_elementary(text)?;
        Ok(if is_value_type(text) {
            Type::Word(text.to_owned())
        } else {
            Type::Dynamic(text.to_owned())
        })
    }

    fn name(&self) -> &str {
        match self {
            Type::Word(name) | Type::Fixed(name, _) | Type::Array(name) | Type::Dynamic(name) => {
                name
            }
        }
    }

    /// Words the type takes in the data's head.
    fn head_words(&self) -> usize {
        match self {
            Type::Fixed(_, count) => *count,
            _ => 1,
        }
    }
}

fn is_value_type(text: &str) -> bool {
    let sized = |prefix: &str, max: u32, step: u32| {
        text.strip_prefix(prefix).is_some_and(|bits| {
            bits.parse::<u32>()
                .is_ok_and(|n| n >= step && n <= max && n % step == 0)
        })
    };
    matches!(text, "address" | "bool" | "uint" | "int")
        || sized("uint", 256, 8)
        || sized("int", 256, 8)
        || sized("bytes", 32, 1)
}

fn check_elementary(text: &str) -> Result<(), String> {
    if is_value_type(text) || matches!(text, "bytes" | "string") {
        Ok(())
    } else {
        Err(format!("unknown type {text:?}"))
    }
}

/// The canonical name of an elementary type (`uint` is `uint256`).
fn canonical(text: &str) -> String {
    let (base, suffix) = match text.find('[') {
        Some(at) => text.split_at(at),
        None => (text, ""),
    };
    let base = match base {
        "uint" => "uint256",
        "int" => "int256",
        other => other,
    };
    format!("{base}{suffix}")
}

/// One parameter of an event.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Param {
    ty: Type,
    indexed: bool,
    name: String,
}

/// Where a field's value is in a log.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Place {
    /// `topics[i]`.
    Topic(usize),
    /// The data's head word `i`: the value itself.
    Head(usize),
    /// The data's head word `i`: the offset of an array of words.
    Array(usize),
}

/// An event and the one field whose values are leaves.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EventField {
    name: String,
    signature: String,
    topic: Word,
    topics: usize,
    field: String,
    place: Place,
    /// The indexed value parameters: name and topic index.
    indexed: Vec<(String, usize)>,
    /// Topic index and the word it must hold, for a log to count.
    filters: Vec<(usize, Word)>,
}

impl EventField {
    /// Parses `signature` (as declared: types, `indexed`, names) and finds
    /// `field` among its parameters.
    pub fn parse(signature: &str, field: &str) -> Result<EventField, AbiError> {
        let bad = |reason: String| AbiError::Signature {
            signature: signature.to_owned(),
            reason,
        };
        let (name, params) = split_call(signature).map_err(bad)?;
        let mut parsed = Vec::new();
        for (position, text) in params.iter().enumerate() {
            let words: Vec<&str> = text.split_whitespace().collect();
            let (ty, indexed, param_name) = match words.as_slice() {
                [ty] => (*ty, false, String::new()),
                [ty, "indexed"] => (*ty, true, String::new()),
                [ty, name] => (*ty, false, (*name).to_owned()),
                [ty, "indexed", name] => (*ty, true, (*name).to_owned()),
                _ => {
                    return Err(bad(format!(
                        "parameter {position} {text:?} is not `type [indexed] name`"
                    )));
                }
            };
            let ty = Type::parse(&canonical(ty))
                .map_err(|reason| bad(format!("parameter {position}: {reason}")))?;
            parsed.push(Param {
                ty,
                indexed,
                name: param_name,
            });
        }
        let indexed = parsed.iter().filter(|p| p.indexed).count();
        if indexed > 3 {
            return Err(bad(format!(
                "{indexed} indexed parameters: an event has at most 3"
            )));
        }
        let canonical_signature = format!(
            "{name}({})",
            parsed
                .iter()
                .map(|p| p.ty.name())
                .collect::<Vec<_>>()
                .join(",")
        );
        let (mut topic_index, mut head_word) = (1, 0);
        let mut place = None;
        let mut field_type = None;
        let mut indexed = Vec::new();
        for param in &parsed {
            let here = if param.indexed {
                topic_index += 1;
                match param.ty {
                    Type::Word(_) => {
                        if !param.name.is_empty() {
                            indexed.push((param.name.clone(), topic_index - 1));
                        }
                        Some(Place::Topic(topic_index - 1))
                    }
                    _ => None,
                }
            } else {
                head_word += param.ty.head_words();
                match param.ty {
                    Type::Word(_) => Some(Place::Head(head_word - 1)),
                    Type::Array(_) => Some(Place::Array(head_word - 1)),
                    _ => None,
                }
            };
            if param.name == field {
                field_type = Some(param.ty.name().to_owned());
                place = here;
            }
        }
        let Some(ty) = field_type else {
            return Err(AbiError::NoSuchField {
                event: name.to_owned(),
                field: field.to_owned(),
                names: parsed
                    .iter()
                    .map(|p| p.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
            });
        };
        let Some(place) = place else {
            return Err(AbiError::FieldType {
                event: name.to_owned(),
                field: field.to_owned(),
                ty,
            });
        };
        Ok(EventField {
            name: name.to_owned(),
            topic: keccak(canonical_signature.as_bytes()),
            signature: canonical_signature,
            topics: topic_index,
            field: field.to_owned(),
            place,
            indexed,
            filters: Vec::new(),
        })
    }

    /// This event, counting only logs whose indexed parameter `name` is
    /// `value` (as its topic word: a number big-endian, an address
    /// left-padded); filters add up (all must hold).
    pub fn with_filter(mut self, name: &str, value: Word) -> Result<EventField, AbiError> {
        let Some(&(_, index)) = self.indexed.iter().find(|(n, _)| n == name) else {
            return Err(AbiError::NoSuchFilter {
                event: self.name.clone(),
                name: name.to_owned(),
                names: self
                    .indexed
                    .iter()
                    .map(|(n, _)| n.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
            });
        };
        self.filters.push((index, value));
        Ok(self)
    }

    /// The filters: topic index and the word it must hold.
    pub fn filters(&self) -> &[(usize, Word)] {
        &self.filters
    }

    /// Whether a log of this event (`topics[0]` matched) passes the
    /// filters.
    pub fn matches(&self, topics: &[Word]) -> bool {
        self.filters
            .iter()
            .all(|(index, value)| topics.get(*index) == Some(value))
    }

    /// The event's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The canonical signature (`Deposit(bytes32,uint32,uint256)`).
    pub fn signature(&self) -> &str {
        &self.signature
    }

    /// `topics[0]` of its logs: keccak256 of the canonical signature.
    pub fn topic(&self) -> Word {
        self.topic
    }

    /// The field's values in a log of this event (`topics[0]` already
    /// matched), in order: one, or an array's.
    pub fn values(&self, topics: &[Word], data: &[u8]) -> Result<Vec<Word>, AbiError> {
        if topics.len() != self.topics {
            return Err(AbiError::Topics {
                event: self.name.clone(),
                got: topics.len(),
                want: self.topics,
            });
        }
        match self.place {
            Place::Topic(index) => Ok(topics.get(index).copied().into_iter().collect()),
            Place::Head(index) => Ok(vec![self.word(data, index * 32)?]),
            Place::Array(index) => {
                let offset = self.offset(self.word(data, index * 32)?, "offset")?;
                let length = self.offset(self.word(data, offset)?, "length")?;
                let start = offset + 32;
                let end = length
                    .checked_mul(32)
                    .and_then(|bytes| bytes.checked_add(start))
                    .ok_or_else(|| self.out_of_range("length", length))?;
                let Some(bytes) = data.get(start..end) else {
                    return Err(self.short(data, end));
                };
                Ok(bytes
                    .chunks_exact(32)
                    .map(|chunk| {
                        let mut word = [0; 32];
                        word.copy_from_slice(chunk);
                        word
                    })
                    .collect())
            }
        }
    }

    fn word(&self, data: &[u8], at: usize) -> Result<Word, AbiError> {
        let end = at
            .checked_add(32)
            .ok_or_else(|| self.out_of_range("offset", at))?;
        let Some(bytes) = data.get(at..end) else {
            return Err(self.short(data, end));
        };
        let mut word = [0; 32];
        word.copy_from_slice(bytes);
        Ok(word)
    }

    /// A word as an offset or length into the data (at most 2^32).
    fn offset(&self, word: Word, what: &'static str) -> Result<usize, AbiError> {
        let (high, low) = word.split_at(28);
        if high.iter().any(|&b| b != 0) {
            return Err(AbiError::OutOfRange {
                event: self.name.clone(),
                what,
                value: format!("0x{}", hex::encode(word)),
            });
        }
        let mut bytes = [0; 4];
        bytes.copy_from_slice(low);
        Ok(u32::from_be_bytes(bytes) as usize)
    }

    fn out_of_range(&self, what: &'static str, value: usize) -> AbiError {
        AbiError::OutOfRange {
            event: self.name.clone(),
            what,
            value: format!("{value:#x}"),
        }
    }

    fn short(&self, data: &[u8], want: usize) -> AbiError {
        AbiError::Data {
            event: self.name.clone(),
            field: self.field.clone(),
            got: data.len(),
            want,
        }
    }
}

/// A view call with constant arguments: `getMerkleTreeRoot(uint256)` and
/// its argument words; its answer is read as one word.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Call {
    signature: String,
    calldata: Vec<u8>,
}

impl Call {
    /// Parses `signature` (types only, or declared with names) and encodes
    /// `args` (decimal or 0x-hex, each one word) after its selector.
    pub fn parse(signature: &str, args: &[String]) -> Result<Call, AbiError> {
        let bad = |reason: String| AbiError::Call {
            call: signature.to_owned(),
            reason,
        };
        let (name, params) = split_call(signature).map_err(bad)?;
        let mut types = Vec::new();
        for text in &params {
            let ty = text.split_whitespace().next().unwrap_or_default();
            let ty = canonical(ty);
            if !is_value_type(&ty) {
                return Err(bad(format!(
                    "argument type {ty} is not a value type (one word)"
                )));
            }
            types.push(ty);
        }
        if types.len() != args.len() {
            return Err(bad(format!(
                "{} argument{} given, the call takes {}",
                args.len(),
                if args.len() == 1 { "" } else { "s" },
                types.len()
            )));
        }
        let canonical_signature = format!("{name}({})", types.join(","));
        let selector = keccak(canonical_signature.as_bytes());
        let mut calldata = selector.get(..4).unwrap_or_default().to_vec();
        for arg in args {
            calldata.extend_from_slice(&parse_word(arg).map_err(bad)?);
        }
        Ok(Call {
            signature: canonical_signature,
            calldata,
        })
    }

    /// The canonical signature.
    pub fn signature(&self) -> &str {
        &self.signature
    }

    /// The call's input: selector and arguments.
    pub fn calldata(&self) -> &[u8] {
        &self.calldata
    }
}

/// `Name(a, b, c)` as the name and the parameters' texts, trimmed.
fn split_call(text: &str) -> Result<(&str, Vec<&str>), String> {
    let text = text.trim();
    let open = text
        .find('(')
        .ok_or_else(|| "no opening parenthesis".to_owned())?;
    let inner = text
        .get(open + 1..)
        .and_then(|rest| rest.strip_suffix(')'))
        .ok_or_else(|| "does not end with a closing parenthesis".to_owned())?;
    let name = text.get(..open).unwrap_or_default().trim();
    if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        return Err(format!("{name:?} is not a name"));
    }
    if inner.contains('(') {
        return Err("tuple parameters are not supported".to_owned());
    }
    let params = if inner.trim().is_empty() {
        Vec::new()
    } else {
        inner.split(',').map(str::trim).collect()
    };
    Ok((name, params))
}

/// A decimal or 0x-hex number as a big-endian word.
pub fn parse_word(text: &str) -> Result<Word, String> {
    let mut word = [0u8; 32];
    if let Some(digits) = text.strip_prefix("0x") {
        if digits.is_empty() || digits.len() > 64 {
            return Err(format!("{text} is not 1 to 64 hex digits"));
        }
        let padded = format!("{digits:0>64}");
        hex::decode_to_slice(&padded, &mut word).map_err(|_| format!("{text} is not hex"))?;
        return Ok(word);
    }
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!("{text:?} is not a decimal or 0x-hex number"));
    }
    for digit in text.bytes() {
        // word = word * 10 + digit, big-endian, refusing overflow.
        let mut carry = u32::from(digit - b'0');
        for byte in word.iter_mut().rev() {
            let value = u32::from(*byte) * 10 + carry;
            *byte = (value & 0xff) as u8;
            carry = value >> 8;
        }
        if carry != 0 {
            return Err(format!("{text} does not fit in 256 bits"));
        }
    }
    Ok(word)
}

/// keccak256 of `bytes`.
pub fn keccak(bytes: &[u8]) -> Word {
    Keccak256::digest(bytes).into()
}

#[cfg(test)]
#[expect(clippy::indexing_slicing, clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;

    fn word(n: u64) -> Word {
        let mut w = [0; 32];
        w[24..].copy_from_slice(&n.to_be_bytes());
        w
    }

    #[test]
    fn topic_is_keccak_of_the_canonical_signature() {
        // Transfer(address,address,uint256): the best known topic there is.
        let event = EventField::parse(
            "Transfer(address indexed from, address indexed to, uint value)",
            "value",
        )
        .unwrap();
        assert_eq!(event.signature(), "Transfer(address,address,uint256)");
        assert_eq!(
            hex::encode(event.topic()),
            "ddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef"
        );
    }

    #[test]
    fn indexed_field_is_read_from_its_topic() {
        let event = EventField::parse(
            "Deposit(bytes32 indexed commitment, uint32 leafIndex, uint256 timestamp)",
            "commitment",
        )
        .unwrap();
        let topics = [event.topic(), [7; 32]];
        assert_eq!(event.values(&topics, &[0; 64]).unwrap(), vec![[7; 32]]);
        assert_eq!(
            event.values(&topics[..1], &[0; 64]),
            Err(AbiError::Topics {
                event: "Deposit".into(),
                got: 1,
                want: 2
            })
        );
    }

    #[test]
    fn filters_name_indexed_value_parameters_and_select_logs() {
        let event = EventField::parse(
            "MemberAdded(uint256 indexed groupId, uint256 index, uint256 identityCommitment, uint256 merkleTreeRoot)",
            "identityCommitment",
        )
        .unwrap();
        assert!(event.matches(&[event.topic(), word(3)]));
        let filtered = event.clone().with_filter("groupId", word(5)).unwrap();
        assert_eq!(filtered.filters(), &[(1, word(5))]);
        assert!(filtered.matches(&[event.topic(), word(5)]));
        assert!(!filtered.matches(&[event.topic(), word(3)]));
        assert!(!filtered.matches(&[event.topic()]));
        assert_eq!(
            event.clone().with_filter("index", word(5)),
            Err(AbiError::NoSuchFilter {
                event: "MemberAdded".into(),
                name: "index".into(),
                names: "groupId".into(),
            })
        );
    }

    #[test]
    fn data_field_is_read_after_fixed_arrays_and_dynamic_heads() {
        let event = EventField::parse(
            "E(uint256 indexed group, bytes note, uint8[2] pair, uint256 leaf)",
            "leaf",
        )
        .unwrap();
        // Head: offset of note, pair[0], pair[1], leaf.
        let mut data = Vec::new();
        for w in [word(128), word(1), word(2), word(99), word(0)] {
            data.extend_from_slice(&w);
        }
        let topics = [event.topic(), word(5)];
        assert_eq!(event.values(&topics, &data).unwrap(), vec![word(99)]);
        assert!(matches!(
            event.values(&topics, &data[..100]),
            Err(AbiError::Data {
                got: 100,
                want: 128,
                ..
            })
        ));
    }

    #[test]
    fn array_field_yields_every_element() {
        let event = EventField::parse(
            "MembersAdded(uint256 indexed groupId, uint256 startIndex, uint256[] identityCommitments, uint256 merkleTreeRoot)",
            "identityCommitments",
        )
        .unwrap();
        let mut data = Vec::new();
        for w in [
            word(0),
            word(96),
            word(9),
            word(3),
            word(11),
            word(12),
            word(13),
        ] {
            data.extend_from_slice(&w);
        }
        let topics = [event.topic(), word(1)];
        assert_eq!(
            event.values(&topics, &data).unwrap(),
            vec![word(11), word(12), word(13)]
        );
        // A length that runs past the data.
        data[3 * 32 + 31] = 4;
        assert!(matches!(
            event.values(&topics, &data),
            Err(AbiError::Data { want: 256, .. })
        ));
        // A length no log can hold.
        data[3 * 32] = 1;
        assert!(matches!(
            event.values(&topics, &data),
            Err(AbiError::OutOfRange { what: "length", .. })
        ));
    }

    #[test]
    fn fields_that_cannot_be_leaves_are_refused() {
        assert!(matches!(
            EventField::parse("E(string indexed s)", "s"),
            Err(AbiError::FieldType { .. })
        ));
        assert!(matches!(
            EventField::parse("E(bytes b)", "b"),
            Err(AbiError::FieldType { .. })
        ));
        assert!(matches!(
            EventField::parse("E(uint256 a)", "b"),
            Err(AbiError::NoSuchField { .. })
        ));
        assert!(matches!(
            EventField::parse(
                "E(uint256 indexed a, uint256 indexed b, uint256 indexed c, uint256 indexed d)",
                "a"
            ),
            Err(AbiError::Signature { .. })
        ));
        assert!(matches!(
            EventField::parse("E(uint257 a)", "a"),
            Err(AbiError::Signature { .. })
        ));
        assert!(matches!(
            EventField::parse("E uint256 a", "a"),
            Err(AbiError::Signature { .. })
        ));
    }

    #[test]
    fn call_encodes_selector_and_arguments() {
        // balanceOf(address) is 0x70a08231.
        let call = Call::parse("balanceOf(address owner)", &["0x01".into()]).unwrap();
        assert_eq!(&call.calldata()[..4], &[0x70, 0xa0, 0x82, 0x31]);
        assert_eq!(call.calldata()[4..], word(1));
        let root = Call::parse("getMerkleTreeRoot(uint256)", &["258".into()]).unwrap();
        assert_eq!(root.calldata()[4..], word(258));
        assert!(Call::parse("getLastRoot()", &["1".into()]).is_err());
        assert!(Call::parse("f(bytes)", &["1".into()]).is_err());
    }

    #[test]
    fn words_parse_from_decimal_and_hex() {
        assert_eq!(parse_word("0").unwrap(), [0; 32]);
        assert_eq!(parse_word("65535").unwrap(), word(65535));
        assert_eq!(parse_word("0xffff").unwrap(), word(65535));
        let max = "115792089237316195423570985008687907853269984665640564039457584007913129639935";
        assert_eq!(parse_word(max).unwrap(), [0xff; 32]);
        assert!(
            parse_word(
                "115792089237316195423570985008687907853269984665640564039457584007913129639936"
            )
            .is_err()
        );
        assert!(parse_word("0x").is_err());
        assert!(parse_word("-1").is_err());
    }
}
