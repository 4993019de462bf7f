/* jacobi-2d-alt: 3-point stencil along j under a time loop (seed 003 Figure 1);
   rows i never exchange data, so i is a synchronisation-free forall across t */
void kernel_jacobi_2d_alt(int tsteps, int n, float f, float A[n][n], float B[n][n])
{
  for (int t = 0; t < tsteps; t++) {
    for (int i = 0; i < n; i++)
      for (int j = 1; j < n - 1; j++)
        B[i][j] = f * (A[i][j-1] + A[i][j] + A[i][j+1]);
    for (int i = 0; i < n; i++)
      for (int j = 1; j < n - 1; j++)
        A[i][j] = B[i][j];
  }
}
