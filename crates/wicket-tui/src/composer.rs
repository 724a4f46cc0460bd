//! The input box: a multi-line buffer with a cursor. Enter sends (the app
//! decides); Shift+Enter, Alt+Enter and Ctrl+J insert a new line.

/// Text being typed.
#[derive(Debug, Default, Clone)]
pub struct Composer {
    text: String,
    /// A byte index on a character boundary.
    cursor: usize,
}

impl Composer {
    /// The text.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// Whether nothing is typed.
    pub fn is_empty(&self) -> bool {
        self.text.is_empty()
    }

    /// Takes the text out, leaving the box empty.
    pub fn take(&mut self) -> String {
        self.cursor = 0;
        std::mem::take(&mut self.text)
    }

    /// Replaces the text (history recall); the cursor goes to its end.
    pub fn set(&mut self, text: &str) {
        self.text = text.to_string();
        self.cursor = self.text.len();
    }

    /// Inserts `text` at the cursor (a key, or a paste).
    pub fn insert(&mut self, text: &str) {
        self.text.insert_str(self.cursor, text);
        self.cursor += text.len();
    }

    /// Deletes the character before the cursor.
    pub fn backspace(&mut self) {
        if let Some(c) = self.text[..self.cursor].chars().next_back() {
            self.cursor -= c.len_utf8();
            self.text.remove(self.cursor);
        }
    }

    /// Deletes the character at the cursor.
    pub fn delete(&mut self) {
        if self.cursor < self.text.len() {
            self.text.remove(self.cursor);
        }
    }

    /// One character left.
    pub fn left(&mut self) {
        if let Some(c) = self.text[..self.cursor].chars().next_back() {
            self.cursor -= c.len_utf8();
        }
    }

    /// One character right.
    pub fn right(&mut self) {
        if let Some(c) = self.text[self.cursor..].chars().next() {
            self.cursor += c.len_utf8();
        }
    }

    /// To the start of the line.
    pub fn line_start(&mut self) {
        self.cursor = self.text[..self.cursor].rfind('\n').map_or(0, |at| at + 1);
    }

    /// To the end of the line.
    pub fn line_end(&mut self) {
        self.cursor += self.text[self.cursor..]
            .find('\n')
            .unwrap_or(self.text.len() - self.cursor);
    }

    /// Deletes from the cursor back to the start of the line.
    pub fn kill_to_start(&mut self) {
        let start = self.text[..self.cursor].rfind('\n').map_or(0, |at| at + 1);
        self.text.replace_range(start..self.cursor, "");
        self.cursor = start;
    }

    /// The cursor's line and column (in characters).
    pub fn position(&self) -> (usize, usize) {
        let before = &self.text[..self.cursor];
        let line = before.matches('\n').count();
        let column = before[before.rfind('\n').map_or(0, |at| at + 1)..]
            .chars()
            .count();
        (line, column)
    }

    /// Lines of text.
    pub fn lines(&self) -> usize {
        self.text.split('\n').count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn editing_keeps_the_cursor_on_character_boundaries() {
        let mut c = Composer::default();
        c.insert("héllo");
        c.left();
        c.left();
        c.backspace();
        assert_eq!(c.text(), "hélo");
        assert_eq!(c.position(), (0, 2));
        c.insert("\nnext");
        assert_eq!(c.position(), (1, 4));
        c.line_start();
        c.delete();
        assert_eq!(c.text(), "hé\nextlo");
        c.line_end();
        c.kill_to_start();
        assert_eq!(c.text(), "hé\n");
        assert_eq!(c.lines(), 2);
        assert_eq!(c.take(), "hé\n");
        assert!(c.is_empty());
    }
}
