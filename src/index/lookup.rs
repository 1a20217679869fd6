//! Look-ups a model asks for by name: a path (or the end of one) names files, anything else is
//! taken for a symbol (`send`, `Session.send`, `cobra::Command`) and names its definitions.

use super::RepoIndex;
use super::retrieve::{Span, definers};

/// Most places one name resolves to; a name defined in more files is too vague to show.
pub const MAX_PLACES_PER_NAME: usize = 4;

/// Where a looked-up name is: a whole file (`span` is `None`) or one definition in it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Place {
    pub path: String,
    pub span: Option<Span>,
}

/// The places `name` names, most specific first; empty when nothing in the index matches.
pub fn find(index: &RepoIndex, name: &str) -> Vec<Place> {
    let name = name.trim().trim_matches('`');
    if name.is_empty() {
        return Vec::new();
    }
    let files = index.names().resolve(name, index);
    if !files.is_empty() {
        return files
            .into_iter()
            .take(MAX_PLACES_PER_NAME)
            .map(|id| Place {
                path: index.document(id).path.clone(),
                span: None,
            })
            .collect();
    }
    let parts: Vec<&str> = name
        .split(['.', ':', '#', '/'])
        .filter(|part| !part.is_empty())
        .collect();
    let Some((last, qualifiers)) = parts.split_last() else {
        return Vec::new();
    };
    let mut places = Vec::new();
    for id in definers(index, last, &mut Default::default()) {
        let symbols = index.symbols(id);
        let qualifier = qualifiers.last();
        for symbol in symbols.iter().filter(|s| s.name.eq_ignore_ascii_case(last)) {
            let qualified = qualifier.is_none_or(|qualifier| {
                symbols.iter().any(|outer| {
                    outer.name.eq_ignore_ascii_case(qualifier)
                        && outer.start <= symbol.start
                        && symbol.end <= outer.end
                        && outer != symbol
                }) || index.document(id).path.contains(*qualifier)
            });
            if qualified {
                places.push(Place {
                    path: index.document(id).path.clone(),
                    span: Some(Span::new(symbol.start, symbol.end)),
                });
            }
        }
    }
    if places.len() > MAX_PLACES_PER_NAME * 2 {
        return Vec::new();
    }
    places.truncate(MAX_PLACES_PER_NAME);
    places
}
