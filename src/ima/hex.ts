/**
 * Hex digit values by character code (-1: not hex). It covers every UTF-16 code unit so the hot
 * loops index it with `charCodeAt` directly, without a range check per character.
 */
export const HEX_VALUE = new Int8Array(65536).fill(-1)
for (let c = 0; c < 10; c++) HEX_VALUE[48 + c] = c
for (let c = 0; c < 6; c++) HEX_VALUE[97 + c] = HEX_VALUE[65 + c] = 10 + c

/** HEX_VALUE for lower-case hex only, the form Keylime's policy schema allows. */
export const LOWER_HEX_VALUE = new Int8Array(65536).fill(-1)
for (let c = 0; c < 10; c++) LOWER_HEX_VALUE[48 + c] = c
for (let c = 0; c < 6; c++) LOWER_HEX_VALUE[97 + c] = 10 + c
