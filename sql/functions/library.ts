// Loads every part of the function library (each file registers its entries on import).
import './operators.js';
import './math.js';
import './strings.js';
import './datetime.js';
import './jsonb.js';
import './arrays.js';
import './to-timestamp.js';
import './misc.js';
import './sleep.js';
import './uuid.js';
