/* nbody-potential: the Coulomb potential and field at each of n charged particles from
   all n (a softening term eps keeps i == j finite; n-body style, O(n^2) pairs) */
void nbody_potential(int n, double eps, double pos[n][3], double q[n], double phi[n],
                     double field[n][3])
{
  for (int i = 0; i < n; i++) {
    phi[i] = 0.0;
    for (int d = 0; d < 3; d++)
      field[i][d] = 0.0;
    for (int j = 0; j < n; j++) {
      phi[i] += q[j] / sqrt((pos[i][0] - pos[j][0]) * (pos[i][0] - pos[j][0]) +
                            (pos[i][1] - pos[j][1]) * (pos[i][1] - pos[j][1]) +
                            (pos[i][2] - pos[j][2]) * (pos[i][2] - pos[j][2]) + eps);
      for (int d = 0; d < 3; d++)
        field[i][d] += q[j] * (pos[i][d] - pos[j][d]) /
            pow((pos[i][0] - pos[j][0]) * (pos[i][0] - pos[j][0]) +
                (pos[i][1] - pos[j][1]) * (pos[i][1] - pos[j][1]) +
                (pos[i][2] - pos[j][2]) * (pos[i][2] - pos[j][2]) + eps, 1.5);
    }
  }
}
