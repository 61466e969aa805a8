//! Parquet files of a [`Table`]: `results.parquet` and `series.parquet` beside results.jsonl,
//! readable by pandas, polars or DuckDB without quiclab.
//!
//! Every column is OPTIONAL (nullable): `f64` → DOUBLE, `i64` → INT64, `u64` → INT64 annotated
//! as unsigned 64-bit, `string` → BYTE_ARRAY annotated UTF-8, `bool` → BOOLEAN. One row group,
//! Snappy-compressed. The bytes depend only on the table (and this crate's version of the
//! writer, which it records as `created_by`), so a merged sweep's file equals a local sweep's.
//!
//! Bound: the table is built in memory before it is written, about the size of results.jsonl
//! again (each cell is at most one JSON scalar of a results line); a sweep's results file is
//! itself bounded by the scenario's run limit.

use std::path::Path;
use std::sync::Arc;

use ::parquet::basic::{Compression, IntType, LogicalType, Repetition, Type as Physical};
use ::parquet::column::writer::ColumnWriter;
use ::parquet::data_type::ByteArray;
use ::parquet::file::properties::WriterProperties;
use ::parquet::file::writer::SerializedFileWriter;
use ::parquet::schema::types::Type;

use crate::error::{Error, Result};
use crate::tabular::{Flattener, Table, Values};
use results::layout::{CONNECTIONS_PARQUET, RESULTS_PARQUET, SERIES_DIR, SERIES_PARQUET};

/// Writes `dir/results.parquet` from `dir/results.jsonl` (every line that is a result, in file
/// order: the file mirrors results.jsonl) and, when any run has `dir/series/<id>.csv`,
/// `dir/series.parquet` from those files in the same run order. `store` is `dir`'s store.
pub fn write_dir(dir: &Path, store: &results::store::ResultsStore) -> Result<()> {
    let series_dir = dir.join(SERIES_DIR);
    let mut runs = Flattener::default();
    let mut series = Flattener::default();
    let mut connections = Flattener::default();
    let mut any_series = false;
    let mut failed = None;
    store.for_each_result(|line| {
        runs.add_run(&line);
        connections.add_connections(&line);
        let Some(id) = line.get("id").and_then(serde_json::Value::as_str) else {
            return;
        };
        let file = series_dir.join(results::layout::series_file_name(id));
        match fsutil::read_to_string_bounded(&file, MAX_SERIES_FILE_BYTES) {
            Ok(text) => {
                any_series = true;
                series.add_series(&line, &text);
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => {
                failed.get_or_insert(Error::io(&file)(e));
            }
        }
    })?;
    if let Some(e) = failed {
        return Err(e);
    }
    write(&dir.join(RESULTS_PARQUET), &runs.finish())?;
    let connections = connections.finish();
    if connections.rows > 0 {
        write(&dir.join(CONNECTIONS_PARQUET), &connections)?;
    }
    if any_series {
        write(&dir.join(SERIES_PARQUET), &series.finish())?;
    }
    Ok(())
}

/// Largest `series/<id>.csv` read into `series.parquet`: a run has at most a million series
/// rows (`scenario::limits::MAX_SERIES_ROWS_PER_RUN`) of well under 1 kB each.
pub const MAX_SERIES_FILE_BYTES: u64 = 1 << 30;

/// Writes `table` to `path` through a temporary file and a rename (readers see the old file or
/// the whole new one; a link at `path` is replaced, not followed).
pub fn write(path: &Path, table: &Table) -> Result<()> {
    let file = fsutil::AtomicFile::new(path).map_err(Error::io(path))?;
    let file = write_to(file, table).map_err(|source| Error::Parquet {
        path: path.to_path_buf(),
        source,
    })?;
    file.commit().map_err(Error::io(path))
}

/// Writes `table` as one row group; the caller commits the file.
fn write_to(
    file: fsutil::AtomicFile,
    table: &Table,
) -> parquet::errors::Result<fsutil::AtomicFile> {
    let fields = table
        .columns
        .iter()
        .map(|c| {
            let (physical, logical) = match &c.values {
                Values::F64(_) => (Physical::DOUBLE, None),
                Values::I64(_) => (Physical::INT64, None),
                Values::U64(_) => (
                    Physical::INT64,
                    Some(LogicalType::Integer(IntType {
                        bit_width: 64,
                        is_signed: false,
                    })),
                ),
                Values::Str(_) => (Physical::BYTE_ARRAY, Some(LogicalType::String)),
                Values::Bool(_) => (Physical::BOOLEAN, None),
            };
            Type::primitive_type_builder(&c.name, physical)
                .with_repetition(Repetition::OPTIONAL)
                .with_logical_type(logical)
                .build()
                .map(Arc::new)
        })
        .collect::<parquet::errors::Result<Vec<_>>>()?;
    let schema = Arc::new(
        Type::group_type_builder("quiclab")
            .with_fields(fields)
            .build()?,
    );
    let props = Arc::new(
        WriterProperties::builder()
            .set_compression(Compression::SNAPPY)
            .build(),
    );
    let mut writer = SerializedFileWriter::new(file, schema, props)?;
    let mut group = writer.next_row_group()?;
    let mut columns = table.columns.iter();
    while let Some(mut out) = group.next_column()? {
        let Some(column) = columns.next() else { break };
        match (out.untyped(), &column.values) {
            (ColumnWriter::DoubleColumnWriter(w), Values::F64(v)) => {
                let (present, levels) = split(v, |x| *x);
                w.write_batch(&present, Some(&levels), None)?;
            }
            (ColumnWriter::Int64ColumnWriter(w), Values::I64(v)) => {
                let (present, levels) = split(v, |x| *x);
                w.write_batch(&present, Some(&levels), None)?;
            }
            (ColumnWriter::Int64ColumnWriter(w), Values::U64(v)) => {
                // Unsigned values travel in INT64's bits; the annotation says how to read them.
                let (present, levels) = split(v, |x| *x as i64);
                w.write_batch(&present, Some(&levels), None)?;
            }
            (ColumnWriter::ByteArrayColumnWriter(w), Values::Str(v)) => {
                let (present, levels) = split(v, |s| ByteArray::from(s.as_str()));
                w.write_batch(&present, Some(&levels), None)?;
            }
            (ColumnWriter::BoolColumnWriter(w), Values::Bool(v)) => {
                let (present, levels) = split(v, |x| *x);
                w.write_batch(&present, Some(&levels), None)?;
            }
            _ => {
                return Err(parquet::errors::ParquetError::General(format!(
                    "column {} does not match its schema",
                    column.name
                )))
            }
        }
        out.close()?;
    }
    group.close()?;
    writer.into_inner()
}

/// The present values and the definition levels (1 present, 0 null) of a nullable column.
fn split<T, U>(values: &[Option<T>], f: impl Fn(&T) -> U) -> (Vec<U>, Vec<i16>) {
    let present = values.iter().flatten().map(f).collect();
    let levels = values.iter().map(|v| i16::from(v.is_some())).collect();
    (present, levels)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tabular::{flatten, Column};
    use crate::testutil::TempDir;
    use ::parquet::file::reader::{FileReader, SerializedFileReader};
    use ::parquet::record::Field;
    use serde_json::{json, Value};
    use std::fs::File;

    /// Every row of the file as (column name, JSON value) pairs, with parquet's own reader.
    pub(crate) fn read_rows(path: &Path) -> Vec<Vec<(String, Value)>> {
        let reader = SerializedFileReader::new(File::open(path).expect("open")).expect("parquet");
        reader
            .get_row_iter(None)
            .expect("rows")
            .map(|row| {
                row.expect("row")
                    .get_column_iter()
                    .map(|(name, field)| (name.clone(), json_of(field)))
                    .collect()
            })
            .collect()
    }

    /// A cell as JSON (parquet's own conversion needs its `json` feature).
    fn json_of(field: &Field) -> Value {
        match field {
            Field::Null => Value::Null,
            Field::Bool(b) => json!(b),
            Field::Long(i) => json!(i),
            Field::ULong(u) => json!(u),
            Field::Double(x) => json!(x),
            Field::Str(s) => json!(s),
            other => panic!("unexpected cell {other:?}"),
        }
    }

    #[test]
    fn every_type_round_trips_with_nulls() {
        let dir = TempDir::new("parquet");
        let table = Table {
            rows: 2,
            columns: vec![
                Column {
                    name: "f".into(),
                    values: Values::F64(vec![Some(1.5), None]),
                },
                Column {
                    name: "i".into(),
                    values: Values::I64(vec![None, Some(-3)]),
                },
                Column {
                    name: "seed".into(),
                    values: Values::U64(vec![Some(u64::MAX), Some(7)]),
                },
                Column {
                    name: "link.delay".into(),
                    values: Values::Str(vec![Some("5ms".into()), None]),
                },
                Column {
                    name: "b".into(),
                    values: Values::Bool(vec![Some(true), None]),
                },
            ],
        };
        let path = dir.path().join(RESULTS_PARQUET);
        write(&path, &table).expect("write");
        let rows = read_rows(&path);
        let want = |r: usize| -> Vec<(String, Value)> {
            table
                .columns
                .iter()
                .map(|c| (c.name.clone(), c.values.get(r)))
                .collect()
        };
        assert_eq!(rows, [want(0), want(1)]);
        // Writing again gives the same bytes (merged and local sweeps compare equal).
        let first = std::fs::read(&path).expect("read");
        write(&path, &table).expect("rewrite");
        assert_eq!(std::fs::read(&path).expect("read"), first);
        assert!(!dir.path().join("results.parquet.tmp").exists());
    }

    #[test]
    fn flattened_results_round_trip() {
        let dir = TempDir::new("parquet-flat");
        let runs = vec![json!({
            "id": "p0-r0", "point": 0, "rep": 0, "seed": 12, "scenario": "s",
            "axes": {"link.rate": "5Mbit"},
            "flows": [{"name": "a", "goodput_bps": 2.5e6, "final_mtu": null}],
        })];
        let table = flatten(&runs);
        let path = dir.path().join("t.parquet");
        write(&path, &table).expect("write");
        let rows = read_rows(&path);
        assert_eq!(rows.len(), 1);
        let get = |n: &str| rows[0].iter().find(|(k, _)| k == n).map(|(_, v)| v.clone());
        assert_eq!(get("goodput_bps"), Some(json!(2.5e6)));
        assert_eq!(get("link.rate"), Some(json!("5Mbit")));
        assert_eq!(get("final_mtu"), Some(Value::Null));
        assert_eq!(get("seed"), Some(json!(12)));
    }
}
