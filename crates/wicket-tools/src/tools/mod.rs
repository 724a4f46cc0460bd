//! One tool, one file.

pub mod grep;
pub mod list_dir;
pub mod read_file;
pub mod run;
pub mod search_replace;
pub mod write_file;
