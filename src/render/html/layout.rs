//! A layered drawing of a directed acyclic graph (after Sugiyama): each node in the layer of its
//! longest path from a source, the nodes of each layer ordered by where their neighbours are
//! (barycentres, a few sweeps down and up), then placed as near as their order allows to the
//! middle of their parents and of their children. Every pass is linear in the nodes and edges
//! (a sort per layer aside), never in the paths, so a plan of shared subtrees draws in the size
//! of its nodes.

/// A node's box: its top-left corner and its size, in pixels.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Rect {
    pub(super) x: f64,
    pub(super) y: f64,
    pub(super) width: f64,
    pub(super) height: f64,
}

impl Rect {
    pub(super) fn center_x(&self) -> f64 {
        self.x + self.width / 2.0
    }

    pub(super) fn bottom(&self) -> f64 {
        self.y + self.height
    }
}

/// Where every node goes, and the size of the whole drawing.
#[derive(Debug)]
pub(super) struct Layout {
    /// Each node's box, by the node's index.
    pub(super) boxes: Vec<Rect>,
    pub(super) width: f64,
    pub(super) height: f64,
}

/// Space around the drawing.
const MARGIN: f64 = 16.0;
/// Between two boxes of a layer.
const GAP: f64 = 24.0;
/// Between two layers, where the edges run.
const LAYER_GAP: f64 = 48.0;
/// Ordering sweeps (down, up, ... ending down so that a tree keeps its children under their
/// parent) and placement rounds: a few suffice for the picture, and each is linear.
const SWEEPS: usize = 5;
const ROUNDS: usize = 4;

/// Lays out the nodes of `sizes` (width and height of each, in the order they are first shown)
/// with `edges` from parent to child by index. The graph must be acyclic (a plan is) and have a
/// node (a plan has its root).
pub(super) fn layout(sizes: &[(f64, f64)], edges: &[(usize, usize)]) -> Layout {
    let count = sizes.len();
    let mut parents = vec![Vec::new(); count];
    let mut children = vec![Vec::new(); count];
    for &(parent, child) in edges {
        parents[child].push(parent);
        children[parent].push(child);
    }
    let layers = order(&layering(&parents, &children), &parents, &children);
    let xs = place(&layers, sizes, &parents, &children);

    let mut boxes = vec![Rect { x: 0.0, y: 0.0, width: 0.0, height: 0.0 }; count];
    let mut top = MARGIN;
    let mut width: f64 = 0.0;
    for layer in &layers {
        let height = layer.iter().map(|&node| sizes[node].1).fold(0.0, f64::max);
        for &node in layer {
            let (w, h) = sizes[node];
            boxes[node] = Rect { x: xs[node], y: top, width: w, height: h };
            width = width.max(xs[node] + w);
        }
        top += height + LAYER_GAP;
    }
    Layout { boxes, width: width + MARGIN, height: top - LAYER_GAP + MARGIN }
}

/// Each node's layer: one below its lowest parent (the longest path from a source), found in a
/// topological order (Kahn's).
fn layering(parents: &[Vec<usize>], children: &[Vec<usize>]) -> Vec<usize> {
    let mut waiting: Vec<usize> = parents.iter().map(Vec::len).collect();
    let mut ready: Vec<usize> = (0..parents.len()).filter(|&node| waiting[node] == 0).rev().collect();
    let mut layer = vec![0; parents.len()];
    while let Some(node) = ready.pop() {
        for &child in &children[node] {
            layer[child] = layer[child].max(layer[node] + 1);
            waiting[child] -= 1;
            if waiting[child] == 0 {
                ready.push(child);
            }
        }
    }
    layer
}

/// The nodes of each layer, left to right: first in the order they are shown (a tree's
/// depth-first order draws it without crossings), then sorted by the mean position of their
/// parents (sweeping down) or children (sweeping up), where a position is the node's place in
/// its layer as a fraction of the layer's width.
fn order(layer_of: &[usize], parents: &[Vec<usize>], children: &[Vec<usize>]) -> Vec<Vec<usize>> {
    let depth = layer_of.iter().max().map_or(0, |deepest| deepest + 1);
    let mut layers = vec![Vec::new(); depth];
    for (node, &layer) in layer_of.iter().enumerate() {
        layers[layer].push(node);
    }
    let mut position = vec![0.0; layer_of.len()];
    let reposition = |layer: &[usize], position: &mut [f64]| {
        for (index, &node) in layer.iter().enumerate() {
            position[node] = (index as f64 + 0.5) / layer.len() as f64;
        }
    };
    for layer in &layers {
        reposition(layer, &mut position);
    }
    for sweep in 0..SWEEPS {
        let down = sweep % 2 == 0;
        let indices: Vec<usize> =
            if down { (1..depth).collect() } else { (0..depth.saturating_sub(1)).rev().collect() };
        let neighbours = if down { parents } else { children };
        for index in indices {
            let keys: Vec<(usize, f64)> = layers[index]
                .iter()
                .map(|&node| (node, mean(neighbours[node].iter().map(|&n| position[n])).unwrap_or(position[node])))
                .collect();
            let mut sorted = keys;
            // Stable: equal keys (siblings under one parent) keep their order.
            sorted.sort_by(|a, b| a.1.total_cmp(&b.1));
            layers[index] = sorted.into_iter().map(|(node, _)| node).collect();
            reposition(&layers[index], &mut position);
        }
    }
    layers
}

/// Each node's left edge: layers packed left to right, then in rounds each layer moved, in its
/// order and without overlaps, as close as it can get to centring every node under its parents
/// (going down) and over its children (going up).
fn place(layers: &[Vec<usize>], sizes: &[(f64, f64)], parents: &[Vec<usize>], children: &[Vec<usize>]) -> Vec<f64> {
    let mut x = vec![0.0; sizes.len()];
    for layer in layers {
        let wanted: Vec<f64> = vec![0.0; layer.len()];
        assign(layer, &wanted, sizes, &mut x);
    }
    for _ in 0..ROUNDS {
        for (neighbours, order) in [(parents, false), (children, true)] {
            let mut indices: Vec<usize> = (0..layers.len()).collect();
            if order {
                indices.reverse();
            }
            for index in indices {
                let layer = &layers[index];
                let wanted: Vec<f64> = layer
                    .iter()
                    .map(|&node| {
                        let center = mean(neighbours[node].iter().map(|&n| x[n] + sizes[n].0 / 2.0));
                        center.unwrap_or(x[node] + sizes[node].0 / 2.0) - sizes[node].0 / 2.0
                    })
                    .collect();
                assign(layer, &wanted, sizes, &mut x);
            }
        }
    }
    let left = x.iter().copied().fold(f64::INFINITY, f64::min);
    x.iter().map(|&x| x - left + MARGIN).collect()
}

/// Sets the left edges of `layer`'s nodes as close to `wanted` as their order and the gaps
/// between them allow (least squares: the pool-adjacent-violators algorithm, linear).
fn assign(layer: &[usize], wanted: &[f64], sizes: &[(f64, f64)], x: &mut [f64]) {
    // With each node shifted left by the room the nodes before it need, the constraint is that
    // the shifted edges do not decrease: an isotonic regression.
    let mut offsets = Vec::with_capacity(layer.len());
    let mut offset = 0.0;
    for &node in layer {
        offsets.push(offset);
        offset += sizes[node].0 + GAP;
    }
    // Blocks of pooled values: (sum, count).
    let mut blocks: Vec<(f64, usize)> = Vec::new();
    for (wanted, offset) in wanted.iter().zip(&offsets) {
        blocks.push((wanted - offset, 1));
        while let [.., (sum_a, count_a), (sum_b, count_b)] = blocks[..] {
            if sum_a / count_a as f64 <= sum_b / count_b as f64 {
                break;
            }
            blocks.truncate(blocks.len() - 2);
            blocks.push((sum_a + sum_b, count_a + count_b));
        }
    }
    let fitted = blocks.iter().flat_map(|&(sum, count)| std::iter::repeat_n(sum / count as f64, count));
    for ((&node, offset), value) in layer.iter().zip(&offsets).zip(fitted) {
        x[node] = value + offset;
    }
}

fn mean(values: impl Iterator<Item = f64>) -> Option<f64> {
    let (sum, count) = values.fold((0.0, 0usize), |(sum, count), value| (sum + value, count + 1));
    (count > 0).then(|| sum / count as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn overlaps(a: &Rect, b: &Rect) -> bool {
        a.x < b.x + b.width && b.x < a.x + a.width && a.y < b.y + b.height && b.y < a.y + a.height
    }

    /// No two boxes overlap, and every edge runs downwards.
    fn assert_drawable(layout: &Layout, edges: &[(usize, usize)]) {
        for (i, a) in layout.boxes.iter().enumerate() {
            assert!(a.x >= MARGIN - 1e-9 && a.x + a.width <= layout.width && a.bottom() <= layout.height, "{a:?}");
            for b in &layout.boxes[i + 1..] {
                assert!(!overlaps(a, b), "{a:?} overlaps {b:?}");
            }
        }
        for &(parent, child) in edges {
            assert!(layout.boxes[parent].bottom() < layout.boxes[child].y, "{parent} -> {child} runs downwards");
        }
    }

    #[test]
    fn a_parent_is_centred_over_its_children_and_a_long_edge_goes_down() {
        // 0 -> 1, 2, 3; 1 -> 4 -> 5; 0 -> 5 (a shortcut: 5 goes under 4, not beside 1).
        let sizes = vec![(100.0, 40.0); 6];
        let edges = [(0, 1), (0, 2), (0, 3), (1, 4), (4, 5), (0, 5)];
        let layout = layout(&sizes, &edges);
        assert_drawable(&layout, &edges);
        let boxes = &layout.boxes;
        let middle = [1, 2, 3, 5].iter().map(|&child| boxes[child].center_x()).sum::<f64>() / 4.0;
        assert!((boxes[0].center_x() - middle).abs() < 1.0, "over the middle of its children: {boxes:?}");
        assert_eq!(boxes[5].center_x(), boxes[4].center_x(), "a lone child under its parent");
        assert!(boxes[1].x < boxes[2].x && boxes[2].x < boxes[3].x, "siblings keep their order");
        assert!(boxes[5].y > boxes[4].y, "the longest path sets the layer");
    }

    #[test]
    fn a_diamond_is_drawn_without_crossings_and_wide_boxes_keep_apart() {
        let sizes = [(300.0, 40.0), (50.0, 60.0), (400.0, 40.0), (80.0, 40.0)];
        let edges = [(0, 1), (0, 2), (1, 3), (2, 3)];
        let layout = layout(&sizes, &edges);
        assert_drawable(&layout, &edges);
        assert!(layout.boxes[2].x >= layout.boxes[1].x + 50.0 + GAP - 1e-9);
    }

    #[test]
    fn children_shown_in_the_other_order_than_their_parents_are_uncrossed() {
        // 0 -> 1, 2; the grandchildren shown first 3 (under 2), then 4 (under 1).
        let sizes = vec![(60.0, 30.0); 5];
        let edges = [(0, 1), (0, 2), (2, 3), (1, 4)];
        let layout = layout(&sizes, &edges);
        assert_drawable(&layout, &edges);
        assert!(layout.boxes[4].x < layout.boxes[3].x, "children follow their parents' order");
    }

    #[test]
    fn isotonic_placement_keeps_order_and_gaps() {
        let sizes = [(10.0, 1.0), (10.0, 1.0), (10.0, 1.0)];
        let mut x = vec![0.0; 3];
        assign(&[0, 1, 2], &[50.0, 0.0, 100.0], &sizes, &mut x);
        // The first two want to cross: they meet halfway, a gap apart (8 and 42); the third is free.
        assert!((x[1] - x[0] - (10.0 + GAP)).abs() < 1e-9, "{x:?}");
        assert!((x[0] - 8.0).abs() < 1e-9, "{x:?}");
        assert_eq!(x[2], 100.0);
    }
}
