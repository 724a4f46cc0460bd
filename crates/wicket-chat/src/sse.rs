//! An incremental parser for server-sent events (the WHATWG event-stream
//! format): bytes go in as the network delivers them, whole events come out.
//! Lines are cut on bytes, so a UTF-8 character split across two reads is
//! decoded only once both halves are here.

/// One dispatched event: its `event:` type (if any) and its `data:` lines
/// joined with newlines.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SseEvent {
    pub event: Option<String>,
    pub data: String,
}

#[derive(Debug, Default)]
pub(crate) struct SseParser {
    pending: Vec<u8>,
    event: Option<String>,
    data: Option<String>,
}

impl SseParser {
    /// Feeds the next bytes of the stream; returns the events they complete.
    pub(crate) fn feed(&mut self, bytes: &[u8]) -> Vec<SseEvent> {
        self.pending.extend_from_slice(bytes);
        let mut events = Vec::new();
        let mut start = 0;
        while let Some(end) = memchr::memchr(b'\n', &self.pending[start..]) {
            let line_end = start + end;
            let mut line = &self.pending[start..line_end];
            if let Some(stripped) = line.strip_suffix(b"\r") {
                line = stripped;
            }
            let line = String::from_utf8_lossy(line).into_owned();
            start = line_end + 1;
            if let Some(event) = self.line(&line) {
                events.push(event);
            }
        }
        self.pending.drain(..start);
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

    #[test]
    fn events_split_anywhere_come_out_whole() {
        let stream = "event: a\ndata: {\"x\":\"日本\"}\n\n: comment\r\ndata: one\r\ndata: two\r\n\r\ndata: [DONE]\n\n";
        let whole = SseParser::default().feed(stream.as_bytes());
        let expected = vec![
            event(Some("a"), "{\"x\":\"日本\"}"),
            event(None, "one\ntwo"),
            event(None, "[DONE]"),
        ];
        assert_eq!(whole, expected);
        for piece in 1..8 {
            let mut parser = SseParser::default();
            let mut events = Vec::new();
            for chunk in stream.as_bytes().chunks(piece) {
                events.extend(parser.feed(chunk));
            }
            assert_eq!(events, expected, "pieces of {piece} bytes");
        }
    }

    #[test]
    fn an_event_without_its_blank_line_is_not_dispatched() {
        let mut parser = SseParser::default();
        assert!(parser.feed(b"data: half").is_empty());
        assert!(parser.feed(b"\n").is_empty());
        assert_eq!(parser.feed(b"\n"), vec![event(None, "half")]);
    }

    #[test]
    fn an_event_type_without_data_dispatches_nothing() {
        assert!(SseParser::default().feed(b"event: ping\n\n").is_empty());
    }
}
