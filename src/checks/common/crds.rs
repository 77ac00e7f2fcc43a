//! Karpenter's CRDs: the ones every v1 install needs, what each release added to them, and the
//! versions a CRD serves (KD1002, KD1003).

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;

use crate::iam::reference::Version;

/// The CRDs every v1 install needs (AWS provider).
pub const REQUIRED_CRDS: &[&str] = &[
    "ec2nodeclasses.karpenter.k8s.aws",
    "nodeclaims.karpenter.sh",
    "nodepools.karpenter.sh",
];

/// What each release added to the CRDs: a schema field, or a whole CRD. CRDs that lack what
/// the running controller's release added were not upgraded with it.
pub const FINGERPRINTS: &[(Version, &str, Added)] = &[
    (
        Version(1, 3, 0),
        "ec2nodeclasses.karpenter.k8s.aws",
        Added::SpecField("capacityReservationSelectorTerms"),
    ),
    (Version(1, 7, 0), "nodeoverlays.karpenter.sh", Added::Crd),
    (
        Version(1, 8, 0),
        "nodepools.karpenter.sh",
        Added::SpecField("replicas"),
    ),
    (
        Version(1, 11, 0),
        "ec2nodeclasses.karpenter.k8s.aws",
        Added::SpecField("placementGroupSelector"),
    ),
    (
        Version(1, 14, 0),
        "capacitybuffers.autoscaling.x-k8s.io",
        Added::Crd,
    ),
];

/// What a release added: a whole CRD, or a field of a CRD's spec.
#[derive(Clone, Copy)]
pub enum Added {
    Crd,
    SpecField(&'static str),
}

/// The CRDs a controller release needs beyond [`REQUIRED_CRDS`].
pub fn fingerprint_crds() -> impl Iterator<Item = &'static str> {
    FINGERPRINTS
        .iter()
        .filter(|(_, _, a)| matches!(a, Added::Crd))
        .map(|(_, n, _)| *n)
}

/// The versions a CRD serves.
pub fn served_versions(crd: &CustomResourceDefinition) -> Vec<&str> {
    crd.spec
        .versions
        .iter()
        .filter(|v| v.served)
        .map(|v| v.name.as_str())
        .collect()
}
