//! Which root models' deletions reach a model. A root is a model that no delete relation makes
//! a child: deletions start there. A deletion of a root acts in every model its delete relations
//! reach, and in the children those models nullify (a nullified row's own children are left
//! alone, so a nullify relation reaches no further). A remote model is a root too: its
//! tombstones start deletions of its children here.

use std::collections::{BTreeSet, HashMap, HashSet};

use crate::config::{Config, OnDelete};

/// The roots reaching each model, in both configs.
pub(super) struct Roots {
    /// Per model name, the roots reaching it in either config.
    reaching: HashMap<String, BTreeSet<Root>>,
}

/// A root, ordered as the head declares its models (then the base's that the head lacks).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Root {
    order: usize,
    name: String,
}

impl Roots {
    pub(super) fn new(base: &Config, head: &Config) -> Self {
        let head_names = names(head);
        let base_names = names(base);
        let in_head: HashSet<&String> = head_names.iter().collect();
        let order: HashMap<&str, usize> = head_names
            .iter()
            .chain(base_names.iter().filter(|name| !in_head.contains(name)))
            .enumerate()
            .map(|(index, name)| (name.as_str(), index))
            .collect();
        let mut reaching: HashMap<String, BTreeSet<Root>> = HashMap::new();
        for (config, names) in [(head, &head_names), (base, &base_names)] {
            for (model, roots) in reaching_in(config, names) {
                let roots = roots.into_iter().map(|root| {
                    let name = names[root].clone();
                    Root { order: order.get(name.as_str()).copied().unwrap_or(usize::MAX), name }
                });
                reaching.entry(names[model].clone()).or_default().extend(roots);
            }
        }
        Roots { reaching }
    }

    /// The roots whose deletions act in any of `models`, in declaration order.
    pub(super) fn reaching(&self, models: &[String]) -> Vec<String> {
        let roots: BTreeSet<&Root> = models.iter().filter_map(|model| self.reaching.get(model)).flatten().collect();
        roots.into_iter().map(|root| root.name.clone()).collect()
    }
}

/// The models of `config`, local then remote, in declaration order: the indexes of
/// [`reaching_in`].
fn names(config: &Config) -> Vec<String> {
    config.models.keys().chain(config.remote_models.keys()).cloned().collect()
}

/// Per model index of `names` (the models of `config`), the indexes of the roots reaching it.
fn reaching_in(config: &Config, names: &[String]) -> Vec<(usize, BTreeSet<usize>)> {
    let count = names.len();
    let mut delete_parents: Vec<Vec<usize>> = vec![Vec::new(); count];
    let mut nullify_parents: Vec<Vec<usize>> = vec![Vec::new(); count];
    let relations = config.models.values().map(|model| &model.children);
    for (parent, children) in relations.chain(config.remote_models.values().map(|model| &model.children)).enumerate() {
        for relation in children {
            let Some(child) = config.models.get_index_of(&relation.model.value) else { continue };
            match relation.action() {
                OnDelete::Delete => delete_parents[child].push(parent),
                // The rows stay, or the database deletes them: either way no deletion of
                // cascade's goes below them.
                OnDelete::Nullify | OnDelete::Database => nullify_parents[child].push(parent),
            }
        }
    }
    let deleting = roots_deleting(&delete_parents);
    (0..count)
        .map(|model| {
            let mut roots = deleting[model].clone();
            for &parent in &nullify_parents[model] {
                roots.extend(deleting[parent].iter().copied());
            }
            (model, roots)
        })
        .collect()
}

/// Per model, the roots whose delete relations reach it: itself when nothing deletes it as a
/// child, else its parents' roots. Iterative, as configs can be chains thousands deep; a delete
/// cycle (which `validate` refuses) is cut where it closes.
fn roots_deleting(delete_parents: &[Vec<usize>]) -> Vec<BTreeSet<usize>> {
    #[derive(Clone, Copy, PartialEq)]
    enum State {
        New,
        Open,
        Done,
    }
    let count = delete_parents.len();
    let mut roots: Vec<BTreeSet<usize>> = vec![BTreeSet::new(); count];
    let mut state = vec![State::New; count];
    for start in 0..count {
        let mut stack = vec![(start, false)];
        while let Some((model, parents_done)) = stack.pop() {
            if parents_done {
                let mut found = BTreeSet::new();
                for &parent in &delete_parents[model] {
                    found.extend(roots[parent].iter().copied());
                }
                if delete_parents[model].is_empty() || found.is_empty() {
                    found.insert(model);
                }
                roots[model] = found;
                state[model] = State::Done;
                continue;
            }
            if state[model] != State::New {
                continue;
            }
            state[model] = State::Open;
            stack.push((model, true));
            stack.extend(
                delete_parents[model].iter().filter(|&&parent| state[parent] == State::New).map(|&p| (p, false)),
            );
        }
    }
    roots
}
