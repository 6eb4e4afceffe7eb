/* config_tool/addr_plan.h - one /30 per used cable (addr_plan.c). */
#ifndef TETHER_CONFIG_TOOL_ADDR_PLAN_H
#define TETHER_CONFIG_TOOL_ADDR_PLAN_H

#include <stdint.h>

#include "config_tool/config_tool.h"

int ct_plan_addresses(ct_run *run);
int ct_parse_cidr(const char *s, uint32_t *net, uint32_t *mask);

#endif
