//! An incremental parser for server-sent events (the WHATWG event-stream
//! format): bytes go in as the network delivers them, whole events come out.
//! Lines end at CR, LF or CRLF (a CR at the end of what has come so far waits
//! for the next byte, which may be its LF); a BOM at the start is dropped;
//! `:` lines are comments; `data:` lines of one event are joined with
//! newlines. Lines are cut on bytes, so a UTF-8 character split across two
//! reads is decoded only once both halves are here. The one parser for
//! event streams: the chat clients' and the test support's.

/// One dispatched event: its `event:` type (if any) and its `data:` lines
/// joined with newlines.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SseEvent {
    /// The `event:` field, if the event had one.
    pub event: Option<String>,
    /// The `data:` lines, joined with `\n`.
    pub data: String,
}

/// The parser's state between reads.
#[derive(Debug, Default)]
pub struct SseParser {
    pending: Vec<u8>,
    /// How much of `pending` is known to hold no line end: a long line
    /// arriving in many reads is scanned once, not again at every read.
    scanned: usize,
    started: bool,
    event: Option<String>,
    data: Option<String>,
}

const BOM: &[u8] = b"\xEF\xBB\xBF";

impl SseParser {
    /// Feeds the next bytes of the stream; returns the events they complete.
    pub fn feed(&mut self, bytes: &[u8]) -> Vec<SseEvent> {
        self.pending.extend_from_slice(bytes);
        if !self.started {
            if self.pending.len() < BOM.len() && BOM.starts_with(&self.pending) {
                return Vec::new();
            }
            if self.pending.starts_with(BOM) {
                self.pending.drain(..BOM.len());
            }
            self.started = true;
        }
        let mut events = Vec::new();
        let mut start = 0;
        let mut from = self.scanned.min(self.pending.len());
        while let Some(found) = memchr::memchr2(b'\r', b'\n', &self.pending[from..]) {
            let end = from + found;
            let next = match (self.pending[end], self.pending.get(end + 1)) {
                (b'\r', Some(b'\n')) => end + 2,
                // A CR at the end may be half of a CRLF: looked at again
                // with the next read.
                (b'\r', None) => break,
                _ => end + 1,
            };
            let line = String::from_utf8_lossy(&self.pending[start..end]).into_owned();
            start = next;
            from = next;
            events.extend(self.line(&line));
        }
        let unresolved = memchr::memchr2(b'\r', b'\n', &self.pending[from..])
            .map_or(self.pending.len(), |found| from + found);
        self.pending.drain(..start);
        self.scanned = unresolved - start;
        events
    }

    /// The stream ended: a line that a final CR ended is taken, and any
    /// event still without its blank line is dropped, as the spec says.
    pub fn end(&mut self) -> Vec<SseEvent> {
        let mut events = Vec::new();
        if self.pending.ends_with(b"\r") {
            events = self.feed(b"\n");
        }
        self.pending.clear();
        self.scanned = 0;
        self.event = None;
        self.data = None;
        events
    }

    fn line(&mut self, line: &str) -> Option<SseEvent> {
        if line.is_empty() {
            let data = self.data.take();
            let event = self.event.take();
            return data.map(|data| SseEvent { event, data });
        }
        if line.starts_with(':') {
            return None;
        }
        let (field, value) = match line.split_once(':') {
            Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
            None => (line, ""),
        };
        match field {
            "event" => self.event = Some(value.to_string()),
            "data" => match &mut self.data {
                Some(data) => {
                    data.push('\n');
                    data.push_str(value);
                }
                None => self.data = Some(value.to_string()),
            },
            _ => {}
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(event: Option<&str>, data: &str) -> SseEvent {
        SseEvent {
            event: event.map(str::to_string),
            data: data.to_string(),
        }
    }

    /// Every way of cutting `stream` into reads gives `expected`.
    fn parses_in_any_pieces(stream: &[u8], expected: &[SseEvent]) {
        for piece in 1..=stream.len().min(9) {
            let mut parser = SseParser::default();
            let mut events = Vec::new();
            for chunk in stream.chunks(piece) {
                events.extend(parser.feed(chunk));
            }
            events.extend(parser.end());
            assert_eq!(events, expected, "pieces of {piece} bytes");
        }
    }

    #[test]
    fn events_split_anywhere_come_out_whole() {
        let stream = "event: a\ndata: {\"x\":\"日本\"}\n\n: comment\r\ndata: one\r\ndata: two\r\n\r\ndata: [DONE]\n\n";
        parses_in_any_pieces(
            stream.as_bytes(),
            &[
                event(Some("a"), "{\"x\":\"日本\"}"),
                event(None, "one\ntwo"),
                event(None, "[DONE]"),
            ],
        );
    }

    /// The spec's line ends (CR, LF, CRLF, mixed), its comments, multi-line
    /// data, a field with no colon, no space after the colon, and a BOM.
    #[test]
    fn the_specs_line_ends_comments_multiline_data_and_a_bom() {
        parses_in_any_pieces(
            b"\xEF\xBB\xBFdata: cr\r\rdata:lf\n\n:c1\r\n: c2\ndata: a\rdata\rdata: b\r\n\r\nevent:x\ndata: y\r",
            &[event(None, "cr"), event(None, "lf"), event(None, "a\n\nb")],
        );
        parses_in_any_pieces(b"data: end\r\r", &[event(None, "end")]);
    }

    #[test]
    fn an_event_without_its_blank_line_is_not_dispatched() {
        let mut parser = SseParser::default();
        assert!(parser.feed(b"data: half").is_empty());
        assert!(parser.feed(b"\n").is_empty());
        assert_eq!(parser.feed(b"\n"), vec![event(None, "half")]);
        assert!(parser.feed(b"data: cut off").is_empty());
        assert!(parser.end().is_empty());
    }

    #[test]
    fn an_event_type_without_data_dispatches_nothing() {
        assert!(SseParser::default().feed(b"event: ping\n\n").is_empty());
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(crate::proptest_cases()))]

        /// Any bytes, cut anywhere: the parser never panics, gives the same
        /// events as when they come whole, and holds no more than it was given.
        #[test]
        fn any_bytes_in_any_pieces_give_the_same_events(
            stream in proptest::collection::vec(
                proptest::prop_oneof![
                    proptest::prelude::any::<u8>(),
                    proptest::prelude::Just(b'\n'),
                    proptest::prelude::Just(b'\r'),
                    proptest::prelude::Just(b':'),
                ],
                0..300,
            ),
            cuts in proptest::collection::vec(0usize..300, 0..8),
        ) {
            let mut whole = SseParser::default();
            let mut expected = whole.feed(&stream);
            expected.extend(whole.end());
            let mut cuts: Vec<usize> = cuts.into_iter().map(|cut| cut.min(stream.len())).collect();
            cuts.sort_unstable();
            let mut pieces = SseParser::default();
            let mut got = Vec::new();
            let mut from = 0;
            for cut in cuts.into_iter().chain([stream.len()]) {
                got.extend(pieces.feed(&stream[from..cut]));
                proptest::prop_assert!(pieces.pending.len() <= cut);
                from = cut;
            }
            got.extend(pieces.end());
            proptest::prop_assert_eq!(got, expected);
        }
    }
}
