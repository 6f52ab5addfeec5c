//! The book under docs/ holds together as a reader follows it: an mdBook (docs/book.toml,
//! its pages where they are) whose contents, docs/SUMMARY.md, list every page and only
//! pages there are; every relative link of the README and of the book reaches a file, and a
//! link to a heading (`page.md#anchor`) reaches a heading of that page, anchored as GitHub
//! anchors it.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeSet;
use std::path::{Component, Path, PathBuf};

use efb_tests::repo;

fn docs() -> PathBuf {
    repo().join("docs")
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Every Markdown file under `dir`, however deep.
fn markdown_under(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            found.extend(markdown_under(&path));
        } else if path.extension().is_some_and(|e| e == "md") {
            found.push(path);
        }
    }
    found.sort();
    found
}

/// The lines of a Markdown text outside fenced code blocks, with their numbers (from 1):
/// prose, links and headings.
fn prose_lines(text: &str) -> Vec<(usize, String)> {
    let mut fence: Option<&str> = None;
    let mut lines = Vec::new();
    for (number, line) in (1..).zip(text.lines()) {
        let trimmed = line.trim_start();
        let marker = ["```", "~~~"].into_iter().find(|m| trimmed.starts_with(m));
        match (fence, marker) {
            (None, Some(m)) => fence = Some(m),
            (Some(open), Some(m)) if open == m => fence = None,
            (None, None) => lines.push((number, line.to_string())),
            _ => {}
        }
    }
    lines
}

/// `line` with what is between backticks left out.
fn without_code_spans(line: &str) -> String {
    line.split('`').step_by(2).collect::<Vec<_>>().join("")
}

/// The targets of the inline links (`[text](target "title")`, images too) and reference
/// definitions (`[name]: target`) of a line; none in code spans.
fn link_targets(line: &str) -> Vec<String> {
    let line = without_code_spans(line);
    let mut targets = Vec::new();
    let mut rest = line.as_str();
    while let Some(at) = rest.find("](") {
        let after = &rest[at + 2..];
        let end = after.find(')').unwrap_or(after.len());
        targets.push(destination(&after[..end]));
        rest = &after[end..];
    }
    let definition = line.trim_start().strip_prefix('[').and_then(|l| {
        let (label, target) = l.split_once("]:")?;
        (!label.is_empty()).then(|| destination(target))
    });
    targets.extend(definition);
    targets
}

/// A link's destination without its title and angle brackets.
fn destination(text: &str) -> String {
    let text = text.trim();
    let text = text.split_whitespace().next().unwrap_or_default();
    text.trim_start_matches('<')
        .trim_end_matches('>')
        .replace("%20", " ")
}

/// Links that leave for another site, or are no file: not this test's.
fn is_external(target: &str) -> bool {
    target.contains("://") || target.starts_with("mailto:") || target.is_empty()
}

/// GitHub's anchor of a heading: its text lowercased, spaces to '-', punctuation other than
/// '-' and '_' dropped (Markdown's code marks and emphasis stars are not text).
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

/// A heading's text as a reader sees it: a link's text without its target, code without
/// its backticks.
fn heading_text(heading: &str) -> String {
    let mut text = String::new();
    let mut rest = heading;
    while let Some(at) = rest.find("](") {
        text.push_str(&rest[..at]);
        let after = &rest[at + 2..];
        rest = after.find(')').map_or("", |end| &after[end + 1..]);
    }
    text.push_str(rest);
    text.replace(['[', '*', '`'], "")
}

/// The anchors of a page: one per heading, GitHub's way (a repeated one gets `-1`, `-2`).
fn anchors(page: &str) -> BTreeSet<String> {
    let mut anchors = BTreeSet::new();
    for (_, line) in prose_lines(page) {
        let level = line.chars().take_while(|c| *c == '#').count();
        let Some(heading) = line[level..]
            .strip_prefix(' ')
            .filter(|_| (1..=6).contains(&level))
        else {
            continue;
        };
        let base = slug(&heading_text(heading.trim_end_matches('#')));
        let mut anchor = base.clone();
        for n in 1.. {
            if !anchors.contains(&anchor) {
                break;
            }
            anchor = format!("{base}-{n}");
        }
        anchors.insert(anchor);
    }
    anchors
}

/// `path` without its `.` and `..` steps, so that two spellings of a page compare equal.
fn normal(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

/// What is wrong with the link to `target` on `page`, if anything.
fn broken(page: &Path, target: &str) -> Option<String> {
    let (file, anchor) = target.split_once('#').unwrap_or((target, ""));
    let dir = page.parent().unwrap_or(Path::new(""));
    let file = if file.is_empty() {
        page.to_path_buf()
    } else {
        normal(&dir.join(file))
    };
    let shown = file.strip_prefix(repo()).unwrap_or(&file).display();
    if !file.exists() {
        return Some(format!("{shown} does not exist"));
    }
    let headings = file.extension().is_some_and(|e| e == "md") && !anchor.is_empty();
    if headings && !anchors(&read(&file)).contains(anchor) {
        return Some(format!("{shown} has no heading #{anchor}"));
    }
    None
}

/// The contents' entries, as paths.
fn summary_entries() -> Vec<PathBuf> {
    let summary = docs().join("SUMMARY.md");
    prose_lines(&read(&summary))
        .into_iter()
        .flat_map(|(_, line)| link_targets(&line))
        .filter(|t| !is_external(t))
        .map(|t| normal(&docs().join(t)))
        .collect()
}

#[test]
fn the_book_is_an_mdbook_of_the_pages_where_they_are() {
    let book = read(&docs().join("book.toml"));
    assert!(book.contains("[book]"), "{book}");
    assert!(
        book.lines().any(|l| l.replace(' ', "") == "src=\".\""),
        "the pages stay in docs/: src = \".\"\n{book}"
    );
}

#[test]
fn the_contents_list_every_page_of_the_book_and_only_pages_there_are() {
    let entries = summary_entries();
    let missing: Vec<_> = entries.iter().filter(|p| !p.is_file()).collect();
    assert!(
        missing.is_empty(),
        "SUMMARY.md lists what is not there: {missing:?}"
    );
    let listed: BTreeSet<_> = entries.iter().collect();
    let summary = docs().join("SUMMARY.md");
    let unlisted: Vec<_> = markdown_under(&docs())
        .into_iter()
        .filter(|p| *p != summary && !listed.contains(p))
        .collect();
    assert!(
        unlisted.is_empty(),
        "pages missing from docs/SUMMARY.md: {unlisted:?}"
    );
    assert_eq!(
        entries.first(),
        Some(&docs().join("README.md")),
        "the introduction comes first"
    );
}

#[test]
fn every_link_between_pages_reaches_a_file_and_its_heading() {
    let mut pages = vec![repo().join("README.md")];
    pages.extend(markdown_under(&docs()));
    let mut broken_links = Vec::new();
    let mut checked = 0;
    for page in &pages {
        for (number, line) in prose_lines(&read(page)) {
            for target in link_targets(&line) {
                if is_external(&target) {
                    continue;
                }
                checked += 1;
                if let Some(why) = broken(page, &target) {
                    let at = page.strip_prefix(repo()).unwrap_or(page).display();
                    broken_links.push(format!("{at}:{number}: ({target}): {why}"));
                }
            }
        }
    }
    assert!(
        broken_links.is_empty(),
        "broken links:\n{}",
        broken_links.join("\n")
    );
    assert!(
        checked > 50,
        "only {checked} links found: is the parser blind?"
    );
}

#[test]
fn the_readme_stays_a_front_page() {
    let readme = read(&repo().join("README.md"));
    let lines = readme.lines().count();
    assert!(
        lines < 300,
        "README.md has {lines} lines: move text into the book"
    );
}

/// The anchors this test computes are the ones GitHub gives (checked on pages it shows).
#[test]
fn anchors_are_github_s() {
    let page = "# Security: every limit, with its default\n\
                ## The port inventory (`show interfaces`)\n\
                ```\n# not a heading\n```\n\
                ## Logs and events\n## Logs and events\n\
                ### max_sessions, per [user](users.md)\n";
    let want = [
        "security-every-limit-with-its-default",
        "the-port-inventory-show-interfaces",
        "logs-and-events",
        "logs-and-events-1",
        "max_sessions-per-user",
    ];
    assert_eq!(
        anchors(page),
        want.iter().map(|s| s.to_string()).collect::<BTreeSet<_>>()
    );
}

/// The source files a page names in code spans (`crates/efbd/src/owner.rs`), as paths from
/// the repository's root: words that start with a top folder of the repository and end in
/// a file's extension.
fn named_files(text: &str) -> Vec<(usize, String)> {
    const TOP: [&str; 9] = [
        "crates/",
        "tests/",
        "yang/",
        "proto/",
        "p4/",
        "cli-grammar/",
        "examples/",
        "packaging/",
        "docs/",
    ];
    const EXTENSIONS: [&str; 9] = [
        ".rs", ".toml", ".proto", ".p4", ".yang", ".py", ".sh", ".json", ".yaml",
    ];
    let mut named = Vec::new();
    for (number, line) in (1..).zip(text.lines()) {
        for span in line.split('`').skip(1).step_by(2) {
            let word = span.split_whitespace().next().unwrap_or_default();
            let word = word.trim_end_matches([',', ';', ')', ':']);
            let is_file = TOP.iter().any(|t| word.starts_with(t))
                && EXTENSIONS.iter().any(|e| word.ends_with(e))
                && !word.contains('*');
            if is_file {
                named.push((number, word.to_string()));
            }
        }
    }
    named
}

/// "Where things go" and every other page name source files by their paths: a file moved
/// or renamed without the page following fails here, naming the page and the line.
#[test]
fn every_source_file_a_page_names_is_there() {
    let mut pages = markdown_under(&docs());
    pages.push(repo().join("README.md"));
    let mut missing = Vec::new();
    let mut checked = 0;
    for page in &pages {
        for (number, file) in named_files(&read(page)) {
            checked += 1;
            if !repo().join(&file).exists() {
                missing.push(format!("{}:{number}: {file}", page.display()));
            }
        }
    }
    assert!(
        checked > 20,
        "only {checked} file names found: the reader is broken"
    );
    assert!(
        missing.is_empty(),
        "files named but not there:\n{}",
        missing.join("\n")
    );
}

/// Each recipe of "Where things go" ends with the files it touches and how many: the count
/// it states is the count of files it lists, and each is in the repository, so a recipe
/// cannot say two files where the code takes three.
#[test]
fn each_recipe_of_where_things_go_lists_as_many_files_as_it_says() {
    let page = read(&docs().join("contributing.md"));
    let section = page
        .split("## Where things go")
        .nth(1)
        .and_then(|rest| rest.split("\n## ").next())
        .expect("contributing.md has a Where things go section");
    let recipes: Vec<&str> = section
        .split("\n\n")
        .map(str::trim)
        .filter(|p| p.starts_with("**"))
        .collect();
    assert!(recipes.len() >= 6, "{} recipes found", recipes.len());
    for recipe in recipes {
        let title = recipe.split("**").nth(1).unwrap_or(recipe);
        let touches = recipe
            .split("Touches:")
            .nth(1)
            .unwrap_or_else(|| panic!("{title}: no \"Touches:\" list"));
        let listed: BTreeSet<String> = named_files(touches).into_iter().map(|(_, f)| f).collect();
        let stated: usize = touches
            .rsplit('(')
            .next()
            .and_then(|count| count.split_whitespace().next())
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("{title}: no \"(N files)\" after its list"));
        assert_eq!(listed.len(), stated, "{title}: lists {listed:?}");
        for file in &listed {
            assert!(repo().join(file).exists(), "{title}: {file} is not there");
        }
    }
}
