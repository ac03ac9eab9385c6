/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * abi/layout.h - DT_LAYOUT_ASSERT: the size of a struct the kernel and the agent share, checked
 * once for both languages (each abi/ header asserts the layouts it defines).
 */
#ifndef DTHROTTLE_ABI_LAYOUT_H
#define DTHROTTLE_ABI_LAYOUT_H

#ifdef __cplusplus
#define DT_LAYOUT_ASSERT(type, size) static_assert(sizeof(struct type) == (size), #type " layout")
#else
#define DT_LAYOUT_ASSERT(type, size) _Static_assert(sizeof(struct type) == (size), #type " layout")
#endif

#endif /* DTHROTTLE_ABI_LAYOUT_H */
