//! `gen-session`: writes a deterministic, realistic oh-my-pi / pi v3 session file.
//!
//! ```text
//! gen-session [--preset sample|bench|huge|many-compactions] [--entries N] [--seed S]
//!             [--compaction-every TOKENS | --no-compactions] [--keep-recent TOKENS]
//!             [--branches on|off] [--images on|off] [--extras on|off] [--scale F]
//!             --out FILE|-
//! ```
//! A one-line summary goes to stderr.

use ctxfold_testkit::{generate_to, GenOptions};
use std::io::{self, BufWriter, Write};
use std::process::exit;
use std::time::Instant;

const USAGE: &str =
    "usage: gen-session [--preset sample|bench|huge|many-compactions] [--entries N] [--seed S]
                   [--compaction-every TOKENS | --no-compactions] [--keep-recent TOKENS]
                   [--branches on|off] [--images on|off] [--extras on|off] [--scale F]
                   --out FILE|-

  --preset sample            ~1,500 entries, branches, 2-4 compactions, images, labels (~2 MB)
  --preset bench             50,000 entries, ~145 MB, compaction every 150,000 tokens
  --preset huge              350,000 entries, ~1 GB
  --preset many-compactions  10,000 entries, compaction every 8,000 tokens
  Without a preset: 2,000 entries, compaction every 150,000 tokens, branches/images on.
  Options after/before --preset override it. --out - writes to stdout.";

fn fail(msg: &str) -> ! {
    eprintln!("gen-session: {msg}\n\n{USAGE}");
    exit(2)
}

fn num<T: std::str::FromStr>(flag: &str, v: Option<&String>) -> T {
    let Some(v) = v else {
        fail(&format!("{flag} needs a value"))
    };
    let clean = v.replace('_', "");
    clean
        .parse()
        .unwrap_or_else(|_| fail(&format!("{flag}: not a valid number: {v:?}")))
}

fn on_off(flag: &str, v: Option<&String>) -> bool {
    match v.map(String::as_str) {
        Some("on" | "true" | "yes" | "1") => true,
        Some("off" | "false" | "no" | "0") => false,
        Some(x) => fail(&format!("{flag}: expected on|off, got {x:?}")),
        None => fail(&format!("{flag} needs a value (on|off)")),
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.iter().any(|a| a == "-h" || a == "--help") {
        println!("{USAGE}");
        return;
    }

    // The preset is applied first, wherever it appears; other flags override it.
    let mut opts = GenOptions::default();
    let mut i = 0;
    while i < args.len() {
        if args[i] == "--preset" {
            opts = match args.get(i + 1).map(String::as_str) {
                Some("sample") => GenOptions::sample(),
                Some("bench") => GenOptions::bench(),
                Some("huge") => GenOptions::huge(),
                Some("many-compactions") => GenOptions::many_compactions(),
                Some(p) => fail(&format!("unknown preset {p:?}")),
                None => fail("--preset needs a value"),
            };
        }
        i += 1;
    }

    let mut out: Option<String> = None;
    let mut i = 0;
    while i < args.len() {
        let flag = args[i].as_str();
        let val = args.get(i + 1);
        let mut takes_value = true;
        match flag {
            "--preset" => {}
            "--entries" => opts.entries = num(flag, val),
            "--seed" => opts.seed = num(flag, val),
            "--compaction-every" => {
                let n: u64 = num(flag, val);
                if n == 0 {
                    fail("--compaction-every must be > 0 (use --no-compactions)");
                }
                opts.compaction_every_tokens = Some(n);
            }
            "--no-compactions" => {
                opts.compaction_every_tokens = None;
                takes_value = false;
            }
            "--keep-recent" => opts.keep_recent_tokens = num(flag, val),
            "--branches" => opts.branches = on_off(flag, val),
            "--images" => opts.images = on_off(flag, val),
            "--extras" => opts.extras = on_off(flag, val),
            "--scale" => {
                let f: f64 = num(flag, val);
                if !(f.is_finite() && f > 0.0) {
                    fail("--scale must be a positive number");
                }
                opts.size_scale = f;
            }
            "--out" | "-o" => match val {
                Some(v) => out = Some(v.clone()),
                None => fail("--out needs a value"),
            },
            other => fail(&format!("unknown argument {other:?}")),
        }
        i += if takes_value { 2 } else { 1 };
    }
    let Some(out) = out else {
        fail("--out FILE is required (use --out - for stdout)")
    };

    let started = Instant::now();
    let result = if out == "-" {
        let stdout = io::stdout();
        let mut w = BufWriter::with_capacity(1 << 20, stdout.lock());
        generate_to(&opts, &mut w).and_then(|s| w.flush().map(|()| s))
    } else {
        match std::fs::File::create(&out) {
            Ok(f) => {
                let mut w = BufWriter::with_capacity(1 << 20, f);
                generate_to(&opts, &mut w).and_then(|s| w.flush().map(|()| s))
            }
            Err(e) => {
                eprintln!("gen-session: cannot create {out}: {e}");
                exit(1)
            }
        }
    };
    match result {
        Ok(s) => eprintln!(
            "gen-session: {} entries, {} bytes ({:.1} MB), {} compactions, {} branch points, {} branch summaries, {} images, {} labels, {} tool calls, active path {} entries, leaf {}, max context {} tokens, seed {}, {:.2}s",
            s.entries,
            s.bytes,
            s.bytes as f64 / 1e6,
            s.compactions,
            s.branch_points,
            s.branch_summaries,
            s.images,
            s.labels,
            s.tool_calls,
            s.active_path_len,
            s.leaf_id,
            s.max_context_tokens,
            opts.seed,
            started.elapsed().as_secs_f64()
        ),
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => exit(0),
        Err(e) => {
            eprintln!("gen-session: write failed: {e}");
            exit(1)
        }
    }
}
