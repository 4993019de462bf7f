// expect: 5:5 switch
// options: --size N=8
void f(int N, double A[N], double B[N]) {
  for (int i = 0; i < N; i++)
    switch (i) { case 0: B[i] = A[i]; }
}
