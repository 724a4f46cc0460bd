//! The lines of a `log.jsonl`, read streaming: memory stays within one
//! line's bound whatever the file's size (a 1 GiB sparse file is read past,
//! not held). A line is whole when it ends in a newline; only a tail
//! without one is torn.

use std::io::BufRead;

/// One line as the reader found it.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Line {
    /// A line that ends in a newline (the newline kept), within the bound.
    Whole(Vec<u8>),
    /// A line that ends in a newline, longer than the bound: read past, not
    /// held. Its length with the newline.
    TooLong(u64),
    /// The file's end without a final newline (a crash mid-write): its length.
    Torn(u64),
}

/// Reads lines of at most `max` bytes from `reader`.
pub(crate) struct Lines<R> {
    reader: R,
    max: usize,
    line: Vec<u8>,
}

impl<R: BufRead> Lines<R> {
    pub(crate) fn new(reader: R, max: usize) -> Lines<R> {
        Lines {
            reader,
            max,
            line: Vec::new(),
        }
    }

    /// The next line; `None` at the end.
    pub(crate) fn next_line(&mut self) -> std::io::Result<Option<Line>> {
        self.line.clear();
        // Bytes of this line read past once it outgrew the bound.
        let mut dropped: Option<u64> = None;
        loop {
            let buffer = match self.reader.fill_buf() {
                Ok(buffer) => buffer,
                Err(error) if error.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(error) => return Err(error),
            };
            if buffer.is_empty() {
                let length = dropped.unwrap_or(0) + self.line.len() as u64;
                return Ok((length > 0).then_some(Line::Torn(length)));
            }
            let (piece, ends) = match memchr::memchr(b'\n', buffer) {
                Some(at) => (&buffer[..=at], true),
                None => (buffer, false),
            };
            let taken = piece.len();
            match &mut dropped {
                Some(count) => *count += taken as u64,
                None if self.line.len() + taken > self.max => {
                    dropped = Some((self.line.len() + taken) as u64);
                    self.line = Vec::new();
                }
                None => self.line.extend_from_slice(piece),
            }
            self.reader.consume(taken);
            if ends {
                return Ok(Some(match dropped {
                    Some(length) => Line::TooLong(length),
                    None => Line::Whole(std::mem::take(&mut self.line)),
                }));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(bytes: &[u8], max: usize, capacity: usize) -> Vec<Line> {
        let mut lines = Lines::new(std::io::BufReader::with_capacity(capacity, bytes), max);
        let mut out = Vec::new();
        while let Some(line) = lines.next_line().unwrap() {
            out.push(line);
        }
        out
    }

    #[test]
    fn whole_long_and_torn_lines() {
        let got = lines(b"ab\n0123456789\n\nxyz", 5, 3);
        assert_eq!(
            got,
            [
                Line::Whole(b"ab\n".to_vec()),
                Line::TooLong(11),
                Line::Whole(b"\n".to_vec()),
                Line::Torn(3),
            ]
        );
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(crate::proptest_cases()))]

        /// Any bytes, any bound, any buffer: every newline ends exactly one
        /// line, lines put back together are the bytes, and only the end
        /// without a newline is torn.
        #[test]
        fn every_line_is_kept_and_only_the_tail_is_torn(
            bytes in proptest::collection::vec(
                proptest::prop_oneof![proptest::prelude::any::<u8>(), proptest::prelude::Just(b'\n')],
                0..400,
            ),
            max in 1usize..64,
            capacity in 1usize..32,
        ) {
            let got = lines(&bytes, max, capacity);
            let newlines = bytes.iter().filter(|byte| **byte == b'\n').count();
            let torn = got.iter().filter(|line| matches!(line, Line::Torn(_))).count();
            proptest::prop_assert_eq!(got.len() - torn, newlines);
            proptest::prop_assert_eq!(torn, usize::from(!bytes.is_empty() && !bytes.ends_with(b"\n")));
            proptest::prop_assert!(!matches!(got.last(), Some(line) if torn == 1 && !matches!(line, Line::Torn(_))));
            let mut at = 0usize;
            for line in &got {
                let length = match line {
                    Line::Whole(whole) => {
                        proptest::prop_assert!(whole.len() <= max);
                        proptest::prop_assert_eq!(&bytes[at..at + whole.len()], whole.as_slice());
                        whole.len()
                    }
                    Line::TooLong(length) => {
                        proptest::prop_assert!(*length as usize > max);
                        *length as usize
                    }
                    Line::Torn(length) => *length as usize,
                };
                at += length;
            }
            proptest::prop_assert_eq!(at, bytes.len());
        }
    }
}
