// expect: 4:14 malloc
// options: --size N=8
void f(int N, double A[N], double B[N]) {
  double t = malloc(8);
  B[0] = t;
}
