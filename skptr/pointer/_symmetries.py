"""Mirror images of points in the plane, decoded as more candidates of each sample.

Reflecting the points of a sample, or swapping their two coordinates, leaves every
distance between them unchanged, so a tour of the image is as long as the same tour
of the sample; yet the network sees other inputs and may find a better ordering
(POMO's instance augmentation, Kwon et al. 2020). A reflection is taken about the
middle of the sample's own range in that coordinate, so the image covers the same box
as the sample: points drawn uniformly in a box keep their distribution.
"""

from __future__ import annotations

import numpy as np

__all__ = ["check_augment", "mirror_images"]


def check_augment(augment, n_features):
    """Refuse mirror images of samples that are not points in the plane."""
    if augment and n_features != 2:
        raise ValueError(
            "augment=True decodes mirror images of points in the plane, so it needs 2 "
            f"features per element, but the estimator was fitted on {n_features}; set "
            "augment=False."
        )


def mirror_images(inputs, n_images):
    """Decoder inputs with each sample followed by its first ``n_images - 1`` mirror
    images: image ``k`` reflects the first coordinate when ``k & 1``, the second when
    ``k & 2``, and then swaps the coordinates when ``k & 4``.

    Parameters
    ----------
    inputs : dict
        ``values`` of shape (n_samples, max_length, 2), zero after each sample's
        ``lengths``, as :meth:`~skptr.pointer._codec.PointerCodec.decoder_inputs`
        gives them.
    n_images : int
        Images per sample, at most 8.

    Returns
    -------
    dict
        ``values`` and ``lengths`` of ``n_samples * n_images`` samples: row
        ``i * n_images + k`` is image ``k`` of sample ``i`` (image 0 is the sample
        itself). Padding stays zero.
    """
    values, lengths = inputs["values"], inputs["lengths"]
    mask = (np.arange(values.shape[1])[None, :] < lengths[:, None])[..., None]
    wide = values.astype(np.float64)  # the reflection stays within the sample's range
    low = np.where(mask, wide, np.inf).min(axis=1, keepdims=True)
    high = np.where(mask, wide, -np.inf).max(axis=1, keepdims=True)
    with np.errstate(invalid="ignore"):  # the bounds of an empty sample are not used
        reflected = np.where(mask, low + high - wide, 0).astype(values.dtype)
    images = []
    for image in range(n_images):
        flipped = np.array([image & 1, image & 2], dtype=bool)
        points = np.where(flipped, reflected, values)
        images.append(points[..., ::-1] if image & 4 else points)
    return {
        "values": np.stack(images, axis=1).reshape(-1, *values.shape[1:]),
        "lengths": np.repeat(lengths, n_images),
    }
