/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * abi/layout.h - DT_LAYOUT_ASSERT: the size of a struct the kernel and the agent share, checked
 * once for both languages (each abi/ header asserts the layouts it defines; a union's size:
 * DT_UNION_LAYOUT_ASSERT).
 */
#ifndef DTHROTTLE_ABI_LAYOUT_H
#define DTHROTTLE_ABI_LAYOUT_H

#ifdef __cplusplus
#define DT_STATIC_ASSERT(cond, msg) static_assert(cond, msg)
#else
#define DT_STATIC_ASSERT(cond, msg) _Static_assert(cond, msg)
#endif
#define DT_LAYOUT_ASSERT(type, size) DT_STATIC_ASSERT(sizeof(struct type) == (size), #type " layout")
#define DT_UNION_LAYOUT_ASSERT(type, size) DT_STATIC_ASSERT(sizeof(union type) == (size), #type " layout")

#endif /* DTHROTTLE_ABI_LAYOUT_H */
