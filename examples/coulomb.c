/* cp: direct Coulomb summation (the "cp" benchmark of seed 004 §5): the electrostatic
   potential of NA point charges on one slice z of a grid.  atoms[n] = {x, y, z, q} is
   read-only and indexed only by the sequential loop n: __constant__ memory. */
void coulomb(int NY, int NX, int NA, float spacing, float z,
             float energy[NY][NX], float atoms[NA][4]) {
  for (int i = 0; i < NY; i++)
    for (int j = 0; j < NX; j++)
      for (int n = 0; n < NA; n++)
        energy[i][j] += atoms[n][3] /
            sqrtf((spacing * j - atoms[n][0]) * (spacing * j - atoms[n][0]) +
                  (spacing * i - atoms[n][1]) * (spacing * i - atoms[n][1]) +
                  (z - atoms[n][2]) * (z - atoms[n][2]) + 0.01f);
}
